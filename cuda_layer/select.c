/* The GPU closest to a rank's CPUs, spreading ranks that share a node. */
#include "select.h"

int dcoll_choose_gpu(int ngpus, const int *gpu_numa, int my_numa,
                     int local_rank)
{
    if (ngpus <= 0)
        return -1;
    int near = 0;
    for (int i = 0; i < ngpus; i++)
        near += my_numa >= 0 && gpu_numa[i] == my_numa;
    if (near == 0)
        return local_rank % ngpus;
    int k = local_rank % near;
    for (int i = 0; i < ngpus; i++)
        if (my_numa >= 0 && gpu_numa[i] == my_numa && k-- == 0)
            return i;
    return -1; /* not reached */
}
