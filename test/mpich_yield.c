/* A rank that waits gives its core up: loaded (LD_PRELOAD) into MPICH's
 * ranks by test/mpirun.sh. MPICH's ch4 spins in its progress loop and has
 * no setting that yields, unlike Open MPI's mpi_yield_when_idle; with
 * more ranks than cores, a rank waiting for a peer then burns the time
 * slice the peer needs (a 4-rank collective took 3.4 ms a call on 2
 * cores). Each pass of that loop polls UCX; where a poll finds nothing,
 * this yields. Nothing else changes: test only, never installed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stddef.h>

struct ucp_worker;

/* Exported in place of UCX's, which it calls. */
__attribute__((visibility("default")))
unsigned ucp_worker_progress(struct ucp_worker *worker);

unsigned ucp_worker_progress(struct ucp_worker *worker)
{
    static unsigned (*next)(struct ucp_worker *);
    if (!next) {
        *(void **)&next = dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!next)
            return 0;   /* no UCX below: nothing to poll */
    }
    unsigned n = next(worker);
    if (n == 0)
        sched_yield();
    return n;
}
