/* A team's control segment (seg.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "seg.h"

_Static_assert(sizeof(struct dcoll_seg_rank) == 64 + DCOLL_SEG_BOX,
               "a cache line of numbers a rank, then its box");

static int map(int fd, int k, struct dcoll_seg *s)
{
    size_t bytes = (size_t)k * sizeof(struct dcoll_seg_rank);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        errno = e;
        return -1;
    }
    s->rank = p;
    s->k = k;
    return 0;
}

int dcoll_seg_create(const char *name, int k, struct dcoll_seg *s)
{
    memset(s, 0, sizeof(*s));
    /* A name left by a job that died before unlinking it is stale. */
    shm_unlink(name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)((size_t)k * sizeof(struct dcoll_seg_rank)))) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        errno = e;
        return -1;
    }
    if (map(fd, k, s)) {
        int e = errno;
        shm_unlink(name);
        errno = e;
        return -1;
    }
    return 0;
}

int dcoll_seg_attach(const char *name, int k, struct dcoll_seg *s)
{
    memset(s, 0, sizeof(*s));
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) ||
        (size_t)st.st_size != (size_t)k * sizeof(struct dcoll_seg_rank)) {
        close(fd);
        errno = EINVAL;   /* another team's, or a stale one */
        return -1;
    }
    return map(fd, k, s);
}

void dcoll_seg_unlink(const char *name)
{
    shm_unlink(name);
}

void dcoll_seg_close(struct dcoll_seg *s)
{
    if (s->rank)
        munmap(s->rank, (size_t)s->k * sizeof(struct dcoll_seg_rank));
    memset(s, 0, sizeof(*s));
}

void dcoll_seg_post(struct dcoll_seg *s, int me, enum dcoll_seg_field f,
                    uint64_t n)
{
    atomic_store_explicit(&s->rank[me].seq[f], n, memory_order_release);
}

void dcoll_seg_fail(struct dcoll_seg *s, int me)
{
    atomic_store_explicit(&s->rank[me].failed, 1, memory_order_release);
}

int dcoll_seg_check(const struct dcoll_seg *s, enum dcoll_seg_field f,
                    uint64_t n, int *late)
{
    int behind = -1;
    for (int r = 0; r < s->k; r++) {
        struct dcoll_seg_rank *q = &s->rank[r];
        if (atomic_load_explicit(&q->seq[f], memory_order_acquire) >= n)
            continue;
        /* Behind, and gave up: it never comes. (One that gave up later,
         * on a call after this one, has already done its part here.) */
        if (atomic_load_explicit(&q->failed, memory_order_acquire) &&
            atomic_load_explicit(&q->seq[f], memory_order_acquire) < n) {
            *late = r;
            return -3;
        }
        if (behind < 0)
            behind = r;
    }
    *late = behind;
    return behind >= 0;
}

void dcoll_seg_pause(double waited)
{
    if (waited > 5e-3)
        nanosleep(&(struct timespec){0, 20000}, NULL);
    else if (waited > 5e-5)
        sched_yield();
}

int dcoll_seg_wait(const struct dcoll_seg *s, enum dcoll_seg_field f,
                   uint64_t n, double deadline, double (*now)(void),
                   int *late)
{
    double start = now(), waited = 0;
    for (unsigned turn = 1;; turn++) {
        int rc = dcoll_seg_check(s, f, n, late);
        if (rc <= 0)
            return rc;
        if (turn % 64 == 0) {   /* the clock, not every turn */
            double t = now();
            if (t > deadline)
                return -2;
            waited = t - start;
        }
        dcoll_seg_pause(waited);
    }
}
