// SPDX-License-Identifier: MIT
// fakecuda.h: the interface of the CUDA driver test double (libcuda.so.1 built from fakecuda.c):
// the driver entry points it implements, with their CUDA 13 signatures written over
// interpose/device/cuda_abi.h's types (the tests cannot include <cuda.h>: CI has no toolkit), and the
// double's own introspection (fakecuda_*), which no real driver has. fakecuda.c includes this
// header too, so the compiler holds every definition to these prototypes.
#ifndef ND_FAKECUDA_H
#define ND_FAKECUDA_H

#include "device/cuda_abi.h"

// CUDA values cuda_abi.h does not carry (same numbers as <cuda.h>).
enum {
  FK_CUDA_ERROR_INVALID_HANDLE = 400,
  FK_CUDA_ERROR_NOT_READY = ND_CUDA_ERROR_NOT_READY,
  FK_CUDA_ERROR_NOT_SUPPORTED = 801,
  FK_CUDA_ERROR_UNKNOWN = 999,
  FK_CU_MEM_ATTACH_HOST = 2,
  FK_CU_MEM_ALLOCATION_TYPE_PINNED = 1,
  FK_CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
  FK_CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
  FK_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
  FK_CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  FK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  FK_CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  FK_CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  FK_CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  FK_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  FK_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  FK_CU_MEMORYTYPE_HOST = 1,
  FK_CU_MEMORYTYPE_DEVICE = 2,
};
#define FK_CU_STREAM_LEGACY ND_CU_STREAM_LEGACY
#define FK_CU_STREAM_PER_THREAD ND_CU_STREAM_PER_THREAD
#define FK_CU_STREAM_NON_BLOCKING ND_CU_STREAM_NON_BLOCKING

// CUmemPoolProps and CUmemAccessDesc (cuda.h lays them out so; the double reads only these fields)
typedef struct fk_cu_mem_pool_props {
  int alloc_type;                    // CUmemAllocationType: 1 (pinned, i.e. device memory)
  int handle_types;                  // CUmemAllocationHandleType
  nd_cu_mem_location_t location;     // the device: location.type 1, location.id the ordinal
  void *win32_security_attributes;
  size_t max_size;
  unsigned short usage;
  unsigned char reserved[54];
} fk_cu_mem_pool_props_t;
typedef struct fk_cu_mem_access_desc {
  nd_cu_mem_location_t location;
  int flags;                         // CUmemAccess_flags: 0 none, 1 read, 3 read-write
} fk_cu_mem_access_desc_t;

// ---- the driver API (cuda.h's names; _v2/_ptsz are the ABI versions cuda.h's macros select)
nd_cu_result cuInit(unsigned int flags);
nd_cu_result cuDriverGetVersion(int *version);
nd_cu_result cuDeviceGet(nd_cu_device *device, int ordinal);
nd_cu_result cuDeviceGetCount(int *count);
nd_cu_result cuDeviceTotalMem_v2(size_t *bytes, nd_cu_device dev);
nd_cu_result cuDeviceGetName(char *name, int len, nd_cu_device dev);
nd_cu_result cuDevicePrimaryCtxRetain(nd_cu_context *pctx, nd_cu_device dev);
nd_cu_result cuDevicePrimaryCtxRelease_v2(nd_cu_device dev);
nd_cu_result cuCtxSetCurrent(nd_cu_context ctx);
nd_cu_result cuCtxGetCurrent(nd_cu_context *pctx);
nd_cu_result cuCtxGetDevice(nd_cu_device *device);
nd_cu_result cuCtxSynchronize(void);
nd_cu_result cuMemAlloc_v2(nd_cu_deviceptr *dptr, size_t bytesize);
nd_cu_result cuMemAllocPitch_v2(nd_cu_deviceptr *dptr, size_t *pitch, size_t width_bytes,
                                size_t height, unsigned int element_size_bytes);
nd_cu_result cuMemFree_v2(nd_cu_deviceptr dptr);
nd_cu_result cuMemAllocManaged(nd_cu_deviceptr *dptr, size_t bytesize, unsigned int flags);
nd_cu_result cuMemAllocHost_v2(void **pp, size_t bytesize);
nd_cu_result cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
nd_cu_result cuMemFreeHost(void *p);
nd_cu_result cuMemAllocAsync(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_stream stream);
nd_cu_result cuMemAllocAsync_ptsz(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_stream stream);
nd_cu_result cuMemAllocFromPoolAsync(nd_cu_deviceptr *dptr, size_t bytesize, nd_cu_mempool pool,
                                     nd_cu_stream stream);
nd_cu_result cuMemAllocFromPoolAsync_ptsz(nd_cu_deviceptr *dptr, size_t bytesize,
                                          nd_cu_mempool pool, nd_cu_stream stream);
nd_cu_result cuMemFreeAsync(nd_cu_deviceptr dptr, nd_cu_stream stream);
nd_cu_result cuMemFreeAsync_ptsz(nd_cu_deviceptr dptr, nd_cu_stream stream);
nd_cu_result cuDeviceGetDefaultMemPool(nd_cu_mempool *pool, nd_cu_device dev);
nd_cu_result cuMemPoolCreate(nd_cu_mempool *pool, const fk_cu_mem_pool_props_t *props);
nd_cu_result cuMemPoolDestroy(nd_cu_mempool pool);
nd_cu_result cuMemCreate(nd_cu_mem_handle *handle, size_t size, const nd_cu_mem_alloc_prop_t *prop,
                         unsigned long long flags);
nd_cu_result cuMemRelease(nd_cu_mem_handle handle);
nd_cu_result cuMemGetAllocationGranularity(size_t *granularity, const nd_cu_mem_alloc_prop_t *prop,
                                           int option);
nd_cu_result cuMemAddressReserve(nd_cu_deviceptr *ptr, size_t size, size_t alignment,
                                 nd_cu_deviceptr addr, unsigned long long flags);
nd_cu_result cuMemAddressFree(nd_cu_deviceptr ptr, size_t size);
nd_cu_result cuMemMap(nd_cu_deviceptr ptr, size_t size, size_t offset, nd_cu_mem_handle handle,
                      unsigned long long flags);
nd_cu_result cuMemUnmap(nd_cu_deviceptr ptr, size_t size);
nd_cu_result cuMemSetAccess(nd_cu_deviceptr ptr, size_t size, const fk_cu_mem_access_desc_t *desc,
                            size_t count);
nd_cu_result cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);
nd_cu_result cuPointerGetAttribute(void *data, int attribute, nd_cu_deviceptr ptr);
nd_cu_result cuMemcpyHtoD_v2(nd_cu_deviceptr dst, const void *src, size_t bytes);
nd_cu_result cuMemcpyDtoH_v2(void *dst, nd_cu_deviceptr src, size_t bytes);
nd_cu_result cuMemsetD8_v2(nd_cu_deviceptr dst, unsigned char value, size_t n);
nd_cu_result cuMemcpyHtoDAsync_v2(nd_cu_deviceptr dst, const void *src, size_t bytes,
                                  nd_cu_stream stream);
nd_cu_result cuMemcpyDtoHAsync_v2(void *dst, nd_cu_deviceptr src, size_t bytes, nd_cu_stream stream);
nd_cu_result cuMemsetD8Async(nd_cu_deviceptr dst, unsigned char value, size_t n, nd_cu_stream stream);
nd_cu_result cuMemHostGetDevicePointer_v2(nd_cu_deviceptr *dptr, void *p, unsigned int flags);
nd_cu_result cuStreamCreate(nd_cu_stream *stream, unsigned int flags);
nd_cu_result cuStreamCreateWithPriority(nd_cu_stream *stream, unsigned int flags, int priority);
nd_cu_result cuStreamDestroy_v2(nd_cu_stream stream);
nd_cu_result cuStreamSynchronize(nd_cu_stream stream);
nd_cu_result cuStreamQuery(nd_cu_stream stream);
nd_cu_result cuStreamIsCapturing(nd_cu_stream stream, int *status);
nd_cu_result cuStreamWaitEvent(nd_cu_stream stream, nd_cu_event event, unsigned int flags);
nd_cu_result cuStreamWaitEvent_ptsz(nd_cu_stream stream, nd_cu_event event, unsigned int flags);
nd_cu_result cuEventCreate(nd_cu_event *event, unsigned int flags);
nd_cu_result cuEventDestroy_v2(nd_cu_event event);
nd_cu_result cuEventRecord(nd_cu_event event, nd_cu_stream stream);
nd_cu_result cuEventRecord_ptsz(nd_cu_event event, nd_cu_stream stream);
nd_cu_result cuEventQuery(nd_cu_event event);
nd_cu_result cuEventSynchronize(nd_cu_event event);
nd_cu_result cuGetErrorString(nd_cu_result error, const char **str);
nd_cu_result cuGetErrorName(nd_cu_result error, const char **str);
nd_cu_result cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, nd_cu_u64 flags);
nd_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, nd_cu_u64 flags,
                                 int *symbol_status);

// ---- the double's own truth (not part of any real driver)
// Set in every build of the double, so a program can tell it is not talking to a GPU.
extern const char fakecuda_is_a_test_double[];

// What the double itself handed out, unaffected by anything interposed in front of it.
// dev 0..FAKECUDA_DEVICES-1: device memory (cuMemAlloc, cuMemAllocPitch, the stream-ordered and
// pool allocations, cuMemCreate); FAKECUDA_PINNED: cuMemAllocHost/cuMemHostAlloc;
// FAKECUDA_MANAGED: cuMemAllocManaged (all devices). live_bytes: the bytes the program asked for
// (pitch * height for a pitched allocation) of the blocks still live. alloc_calls: the
// allocation calls that reached the double's allocator for that device or kind, granted or
// refused for lack of memory (calls rejected earlier, e.g. without a context, are not counted).
// Either pointer may be NULL. 0, or -1 before cuInit or for an unknown dev.
#define FAKECUDA_PINNED (-1)
#define FAKECUDA_MANAGED (-2)
int fakecuda_counts(int dev, unsigned long long *live_bytes, unsigned long long *alloc_calls);

// The double's own answer to cuMemGetInfo for device dev (no context needed): free = total -
// bytes of address space handed out on the device (device, managed and cuMemCreate memory,
// each rounded up to its granularity). 0, or -1 before cuInit or for an unknown dev.
int fakecuda_mem(int dev, unsigned long long *free_bytes, unsigned long long *total_bytes);

// Kernel stand-ins, queued on a stream like a kernel launch: after delay_us (the kernel's run
// time, counted from when the stream reaches it), FAKECUDA_ADD writes float dst[i] = src[i] + arg
// and FAKECUDA_FILL uint32_t dst[i] = arg, for i < n. Device, managed and page-locked memory can
// be used; a range that is not live when the kernel runs is a fault (counted, not touched).
// Returns a CUresult.
enum { FAKECUDA_ADD = 1, FAKECUDA_FILL = 2 };
int fakecuda_launch(nd_cu_stream stream, int kernel, unsigned long long dst, unsigned long long src,
                    size_t n, unsigned long long arg, unsigned delay_us);
// Queued work (kernels, copies, memsets, stream-ordered frees) that found its memory not live
// when it ran.
unsigned long long fakecuda_faults(void);
// How often the program (or a shim in front of the double) called one driver function, by its
// cuda.h name without version suffix: cuMemAlloc, cuMemFree, cuMemAllocAsync (with
// FromPoolAsync and _ptsz), cuMemFreeAsync, cuCtxSynchronize, cuStreamSynchronize,
// cuEventRecord, cuEventQuery, cuEventSynchronize, cuStreamWaitEvent, cuMemHostAlloc (with
// cuMemAllocHost), cuMemFreeHost, cuMemHostGetDevicePointer. -1 for another name.
long long fakecuda_calls(const char *fn);

// The granularity at which the double hands out device address space: cuMemAlloc-family blocks
// are rounded up to the page size, cuMemCreate sizes must be multiples of this.
#define FAKECUDA_VMM_GRANULARITY ((size_t)2 << 20)

#endif
