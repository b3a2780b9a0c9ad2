// SPDX-License-Identifier: MIT
// cuda_abi.h: the part of the CUDA driver API's binary interface that ndmem's hooks (cuda.c) and
// the driver test double (tests/gpu/fakecuda) use, written out so that both build without the
// CUDA toolkit. Names carry an nd_ prefix so this header can sit beside <cuda.h>: the unit test
// test_cuda_abi (built when the toolkit is present) asserts every value and layout against it.
#ifndef ND_CUDA_ABI_H
#define ND_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int nd_cu_result;                        // CUresult
typedef unsigned long long nd_cu_deviceptr;      // CUdeviceptr (64-bit)
typedef int nd_cu_device;                        // CUdevice
typedef void *nd_cu_stream;                      // CUstream
typedef void *nd_cu_event;                       // CUevent
typedef void *nd_cu_context;                     // CUcontext
typedef void *nd_cu_mempool;                     // CUmemoryPool
typedef unsigned long long nd_cu_mem_handle;     // CUmemGenericAllocationHandle
typedef uint64_t nd_cu_u64;                      // cuuint64_t

enum {
  ND_CUDA_SUCCESS = 0,
  ND_CUDA_ERROR_INVALID_VALUE = 1,
  ND_CUDA_ERROR_OUT_OF_MEMORY = 2,
  ND_CUDA_ERROR_NOT_INITIALIZED = 3,
  ND_CUDA_ERROR_NO_DEVICE = 100,
  ND_CUDA_ERROR_INVALID_DEVICE = 101,
  ND_CUDA_ERROR_INVALID_CONTEXT = 201,
  ND_CUDA_ERROR_NOT_FOUND = 500,
  ND_CUDA_ERROR_NOT_READY = 600,
};

// Streams and events: the special stream handles, cuStreamCreate's and cuEventCreate's flags,
// cuMemHostAlloc's flags.
#define ND_CU_STREAM_LEGACY ((nd_cu_stream)0x1)
#define ND_CU_STREAM_PER_THREAD ((nd_cu_stream)0x2)
enum { ND_CU_STREAM_NON_BLOCKING = 1 };
enum { ND_CU_EVENT_DISABLE_TIMING = 2 };
enum { ND_CU_MEMHOSTALLOC_PORTABLE = 1, ND_CU_MEMHOSTALLOC_DEVICEMAP = 2 };

// cuGetProcAddress flags and its symbolStatus (CUdriverProcAddressQueryResult)
enum {
  ND_CU_GET_PROC_ADDRESS_DEFAULT = 0,
  ND_CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
  ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
};
enum {
  ND_CU_GET_PROC_ADDRESS_SUCCESS = 0,
  ND_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  ND_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

enum { ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9 }; // CUpointer_attribute
enum { ND_CU_MEM_ATTACH_GLOBAL = 1 };                // cuMemAllocManaged flags
enum { ND_CU_MEM_LOCATION_TYPE_DEVICE = 1 };         // CUmemLocationType

typedef struct nd_cu_mem_location { // CUmemLocation
  int type;                         // CUmemLocationType
  int id;
} nd_cu_mem_location_t;

typedef struct nd_cu_mem_alloc_prop { // CUmemAllocationProp
  int type;                           // CUmemAllocationType (1: pinned, i.e. device memory)
  int requested_handle_types;
  nd_cu_mem_location_t location;
  void *win32_handle_meta_data;
  struct {
    unsigned char compression_type, gpu_direct_rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
  } alloc_flags;
} nd_cu_mem_alloc_prop_t;

// The versions at which cuGetProcAddress answers a base name with its _v2 entry point
// (cuMemAlloc -> cuMemAlloc_v2 ...) and cuGetProcAddress -> cuGetProcAddress_v2.
#define ND_CU_V2_MEM_VERSION 3020
#define ND_CU_V2_PROC_VERSION 12000

#endif
