// SPDX-License-Identifier: MIT
// test_cuda_abi: interpose/device/cuda_abi.h (the driver API's binary interface, written out so that the
// shim and the driver test double build without the toolkit) agrees with the toolkit's <cuda.h>:
// every value and every layout the hooks rely on. Built only where the toolkit is found.
#include <cuda.h>

#include "device/cuda_abi.h"

#include <stddef.h>
#include <stdio.h>

#define SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " == " #b)
#define LAYOUT(a, b) _Static_assert(sizeof(a) == sizeof(b), "sizeof " #a)
#define AT(a, fa, b, fb) _Static_assert(offsetof(a, fa) == offsetof(b, fb), #a "." #fa)

SAME(ND_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(ND_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(ND_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(ND_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(ND_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(ND_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(ND_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME(ND_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME(ND_CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);
SAME(ND_CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
SAME(ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
SAME(ND_CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
SAME(ND_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
SAME(ND_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
SAME(ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
SAME(ND_CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL);
SAME(ND_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME(ND_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME(ND_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME(ND_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME(ND_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME(ND_CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_DEVICEMAP);

LAYOUT(nd_cu_result, CUresult);
LAYOUT(nd_cu_deviceptr, CUdeviceptr);
LAYOUT(nd_cu_device, CUdevice);
LAYOUT(nd_cu_stream, CUstream);
LAYOUT(nd_cu_event, CUevent);
LAYOUT(nd_cu_context, CUcontext);
LAYOUT(nd_cu_mempool, CUmemoryPool);
LAYOUT(nd_cu_mem_handle, CUmemGenericAllocationHandle);
LAYOUT(nd_cu_u64, cuuint64_t);
LAYOUT(nd_cu_mem_location_t, CUmemLocation);
AT(nd_cu_mem_location_t, type, CUmemLocation, type);
AT(nd_cu_mem_location_t, id, CUmemLocation, id);
LAYOUT(nd_cu_mem_alloc_prop_t, CUmemAllocationProp);
AT(nd_cu_mem_alloc_prop_t, type, CUmemAllocationProp, type);
AT(nd_cu_mem_alloc_prop_t, requested_handle_types, CUmemAllocationProp, requestedHandleTypes);
AT(nd_cu_mem_alloc_prop_t, location, CUmemAllocationProp, location);
AT(nd_cu_mem_alloc_prop_t, win32_handle_meta_data, CUmemAllocationProp, win32HandleMetaData);
AT(nd_cu_mem_alloc_prop_t, alloc_flags, CUmemAllocationProp, allocFlags);

// The names cuGetProcAddress answers with the _v2 entry points are the toolkit's macros.
#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
  static const struct {
    const char *macro, *want;
  } names[] = {{STR(cuMemAlloc), "cuMemAlloc_v2"},     {STR(cuMemAllocPitch), "cuMemAllocPitch_v2"},
               {STR(cuMemFree), "cuMemFree_v2"},       {STR(cuMemAllocHost), "cuMemAllocHost_v2"},
               {STR(cuMemGetInfo), "cuMemGetInfo_v2"}, {STR(cuGetProcAddress), "cuGetProcAddress_v2"}};
  int fail = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *a = names[i].macro, *b = names[i].want;
    while (*a && *a == *b) a++, b++;
    if (*a || *b) {
      fprintf(stderr, "<cuda.h> maps to %s, the hooks export %s\n", names[i].macro, names[i].want);
      fail = 1;
    }
  }
  if (ND_CU_STREAM_LEGACY != (nd_cu_stream)CU_STREAM_LEGACY ||
      ND_CU_STREAM_PER_THREAD != (nd_cu_stream)CU_STREAM_PER_THREAD) {
    fprintf(stderr, "the special stream handles differ from <cuda.h>'s\n");
    fail = 1;
  }
  printf("cuda_abi.h agrees with <cuda.h> (CUDA_VERSION %d)\n", CUDA_VERSION);
  return fail;
}
