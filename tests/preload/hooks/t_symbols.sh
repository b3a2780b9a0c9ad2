#!/bin/sh
# SPDX-License-Identifier: MIT
# t_symbols: libndmem.so exports exactly the hooks (libc: the allocators, the ends of a process,
# the exec family and __libc_start_main, dup2 and dup3; C++; the CUDA driver's memory functions
# and dlsym, which answers lookups of them) and ndmem_* (nothing internal leaks into the
# program's namespace, where it could collide with the program's own symbols).
# usage: t_symbols.sh LIBNDMEM HAVE_FREE_SIZED(0|1)
lib=$1
# C++ operator new/delete, every form (mangled)
cxx="_Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t _ZnwmSt11align_val_t _ZnamSt11align_val_t
  _ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t _ZdlPv _ZdaPv _ZdlPvm
  _ZdaPvm _ZdlPvSt11align_val_t _ZdaPvSt11align_val_t _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t
  _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t _ZdlPvSt11align_val_tRKSt9nothrow_t
  _ZdaPvSt11align_val_tRKSt9nothrow_t"
cuda="cuGetProcAddress cuGetProcAddress_v2 cuMemAllocAsync cuMemAllocAsync_ptsz cuMemAllocFromPoolAsync
  cuMemAllocFromPoolAsync_ptsz cuMemAllocHost_v2 cuMemAllocManaged cuMemAllocPitch_v2 cuMemAlloc_v2
  cuMemCreate cuMemFreeAsync cuMemFreeAsync_ptsz cuMemFreeHost cuMemFree_v2 cuMemGetInfo_v2
  cuMemHostAlloc cuMemMap cuMemRelease cuMemUnmap cuStreamCreate cuStreamCreateWithPriority
  cuStreamDestroy_v2 dlsym"
want="$cxx $cuda ndmem_device_stats ndmem_device_ws_stats ndmem_cupti_update _Exit _exit __libc_start_main dup2 dup3 execl execle execlp execv execve execveat execvp execvpe fexecve aligned_alloc calloc free malloc malloc_trim malloc_usable_size memalign mmap mmap64 mremap munmap ndmem_cycle_begin ndmem_cycle_end ndmem_limit_set ndmem_limits ndmem_stats ndmem_version ndmem_workspace_configure ndmem_workspace_enter ndmem_workspace_leave ndmem_ws_stats posix_memalign pipe2 pthread_clockjoin_np pthread_create pthread_detach pthread_join pthread_key_create pthread_setspecific pthread_timedjoin_np pthread_tryjoin_np pvalloc realloc reallocarray sigaction signal valloc"
[ "$2" = 1 ] && want="$want free_aligned_sized free_sized"
want=$(printf '%s\n' $want | sort | tr '\n' ' ')
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiVBDRGSu]$/ {print $3}' | sed 's/@.*//' | sort | tr '\n' ' ')
if [ "$got" != "$want" ]; then
  echo "exported symbols differ" >&2
  echo "got:  $got" >&2
  echo "want: $want" >&2
  exit 1
fi
