/* What the CUDA double (cudart.c) offers tests and the NCCL double beyond
 * CUDA's own API. */
#ifndef DCOLL_CUDART_DOUBLE_H
#define DCOLL_CUDART_DOUBLE_H

/* From now on every CUDA call fails with cudaErrorIllegalAddress, as
 * after a kernel's fault (a sticky error). */
void fake_cuda_fault(void);
/* Bit d set: device d has a context in this process. */
unsigned fake_cuda_contexts(void);
/* The sticky error of fake_cuda_fault from the copy after the next
 * copies copies on (cudaMemcpyAsync and cudaMemcpy). */
void fake_cuda_fault_after(long copies);
/* Bytes of pinned host memory held now. */
long fake_cuda_pinned_bytes(void);
/* cudaMallocHost calls so far (each one synchronises the device). */
long fake_cuda_pinned_calls(void);
/* cudaPointerGetAttributes calls so far. */
long fake_cuda_queries(void);
/* A pointer whose query fails, as one of a context this process cannot
 * see does. */
void *fake_cuda_foreign(void);
/* Run fn(arg) in stream order on stream (NULL: the legacy stream);
 * 0, or -1 after a sticky error. On a stream being captured, it runs at
 * each launch of the graph, and drop(arg) (where not NULL) when the graph
 * is destroyed. */
int fake_cuda_enqueue(void *stream, void (*fn)(void *), void *arg,
                      void (*drop)(void *));
/* The address the double itself uses for p (device memory's second
 * mapping); p where it is host memory. */
void *fake_cuda_real(const void *p);
/* The driver's context calls, as cuda.h declares them (0: success). */
int cuCtxGetCurrent(void **ctx);
int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size,
                            unsigned long long dptr);
int cuCtxSetCurrent(void *ctx);
/* The device p is on, or -1. */
int fake_cuda_device_of(const void *p);
/* Copies from device to host memory so far (any cudaMemcpy*). */
long fake_cuda_to_host(void);
/* cudaIpcOpenMemHandle calls that succeeded so far. */
long fake_cuda_ipc_opens(void);
/* 1 once the process's exit has torn the runtime down. */
int fake_cuda_torn_down(void);

/* The NCCL double (nccl.c): ncclCommAbort calls so far; communicators
 * made and not yet destroyed or aborted; the next collective of this
 * process reports an asynchronous error and hangs until aborted. */
long fake_nccl_aborts(void);
long fake_nccl_calls(void);   /* stream ops run: collectives, groups */
long fake_nccl_inits(void);   /* communicators made by ncclCommInitRank* */
long fake_nccl_splits(void);  /* and by ncclCommSplit */
long fake_nccl_shrinks(void); /* and by ncclCommShrink */
long fake_nccl_live(void);
void fake_nccl_break(void);

#endif
