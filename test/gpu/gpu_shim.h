/* What the GPU tests call of CUDA, three ways: CUDA itself; the CUDA
 * double (CUDA_DOUBLE, test/double/); or, with FAKE_DEVICE, the fake
 * plugin (fake_plugin.c), whose device memory only it may touch, reached
 * through the symbols it exports for tests. nccl_ran: the calls the
 * double's or the fake's NCCL has run (-1: none to ask). */
#ifndef DCOLL_TEST_GPU_SHIM_H
#define DCOLL_TEST_GPU_SHIM_H

#include <stdlib.h>
#ifdef FAKE_DEVICE
#include <dlfcn.h>
typedef void *cudaStream_t;
static void *(*fake_alloc)(size_t);
static void (*fake_copy)(void *, const void *, size_t);
static long (*fake_nccl_calls)(void);
static inline long nccl_ran(void) { return fake_nccl_calls ? fake_nccl_calls() : -1; }
#define cudaSuccess 0
#define cudaMemcpyHostToDevice 0
#define cudaMemcpyDeviceToHost 0
static inline int cudaGetDeviceCount(int *n)
{
    const char *path = getenv("DCOLL_CUDA_PLUGIN");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    *(void **)&fake_alloc = h ? dlsym(h, "fake_device_alloc") : NULL;
    *(void **)&fake_copy = h ? dlsym(h, "fake_device_copy") : NULL;
    *(void **)&fake_nccl_calls = h ? dlsym(h, "fake_nccl_calls") : NULL;
    *n = fake_alloc && fake_copy;
    return 0;
}
static inline const char *cudaGetErrorString(int e) { (void)e; return "no fake plugin"; }
static inline int cudaGetLastError(void) { return 0; }
static inline void cudaSetDevice(int d) { (void)d; }
static inline void cudaMalloc(void **p, size_t b) { *p = fake_alloc(b); }
static inline void cudaFree(void *p) { (void)p; }
static inline void cudaMemcpy(void *d, const void *s, size_t b, int k) { (void)k; fake_copy(d, s, b); }
static inline void cudaStreamCreate(cudaStream_t *s) { *s = (void *)0x5; }
static inline void cudaStreamDestroy(cudaStream_t s) { (void)s; }
#else
#include <cuda_runtime_api.h>
#ifdef CUDA_DOUBLE
#include "cudart_double.h"
static inline long nccl_ran(void) { return fake_nccl_calls(); }
#endif
#endif

#endif
