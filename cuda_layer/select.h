/* Choosing a GPU for a rank: no CUDA here, so it is unit-tested anywhere. */
#ifndef DCOLL_CUDA_SELECT_H
#define DCOLL_CUDA_SELECT_H

/* The GPU for local rank local_rank: among the GPUs attached to its NUMA
 * node (gpu_numa[i] == my_numa) if there are any, else among all, in turn
 * by local rank. gpu_numa[i] or my_numa may be -1 (unknown). Returns -1
 * when ngpus is 0. */
int dcoll_choose_gpu(int ngpus, const int *gpu_numa, int my_numa,
                     int local_rank);

#endif
