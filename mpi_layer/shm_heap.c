/* A group's shared heaps (dcoll_mem_alloc): memory every member of a
 * group on one node maps, a part a rank, so that the shared segment's
 * calls read a buffer that lies there in place instead of copying it
 * into the rank's slot first (mpi_layer/shm.h). Elsewhere, memory of the
 * process's own, which the calls take as any other. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "shm.h"

#define HEAP_ALIGN 4096

static size_t page_up(size_t n)
{
    return (n + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN;
}

/* What rank 0 tells the others: the object's name, or why it has none. */
struct heap_made {
    char name[56];
    int err;
};

/* A shared heap of k parts of stride bytes among g's ranks: rank 0
 * creates and reserves the object, the others map it by name, and all
 * agree that every rank has it before rank 0 unlinks it (after that no
 * process can open it, and it goes with the last mapping). Collective
 * over g, after the core's agreement: every rank is here. */
static dcoll_status_t map_shared(struct dcoll_group *g,
                                 struct dcoll_mpi_heap *h, const char *fn)
{
    static unsigned made_here;
    struct heap_made m = {.err = 0};
    size_t bytes = h->stride * (size_t)g->size;
    int fd = -1;
    if (g->rank == 0) {
        snprintf(m.name, sizeof(m.name), "/dcoll-heap-%ld-%d-%u",
                 (long)getpid(), g->id, ++made_here);
        fd = shm_open(m.name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
            m.err = errno;
        /* Reserved, not only sized: a full /dev/shm fails here, not
         * with SIGBUS at the first touch. */
        else if ((m.err = posix_fallocate(fd, 0, (off_t)bytes)))
            shm_unlink(m.name);
    }
    dcoll_status_t st = dcoll_mpi_bcast_bytes(g, &m, sizeof(m), 0);
    if (st) {
        if (fd >= 0) {
            close(fd);
            shm_unlink(m.name);
        }
        return st;
    }
    m.name[sizeof(m.name) - 1] = '\0';
    int err = m.err;
    if (!err && g->rank != 0 &&
        (fd = shm_open(m.name, O_RDWR | O_CLOEXEC, 0)) < 0)
        err = errno;
    void *p = MAP_FAILED;
    if (!err && (p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                          fd, 0)) == MAP_FAILED)
        err = errno;
    if (fd >= 0)
        close(fd);
    int ok = !err;
    st = dcoll_mpi_agree(g, &ok);
    if (g->rank == 0 && !m.err)
        shm_unlink(m.name);
    if (st || !ok) {
        if (p != MAP_FAILED)
            munmap(p, bytes);
        if (st)
            return st;
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no shared memory of "
                           "%zu bytes for the group's %d ranks (%zu bytes "
                           "in /dev/shm): %s", fn, h->bytes, g->size, bytes,
                           m.err ? strerror(m.err)
                           : err ? strerror(err)
                                 : "another rank could not map it");
    }
    h->base = p;
    h->mapped = bytes;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_mem_alloc(struct dcoll_group *g, size_t bytes,
                                   void **ptr, const char *fn)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    struct dcoll_mpi_heap *h = calloc(1, sizeof(*h));
    int ok = h != NULL;
    bool mine = ok;
    /* One answer for every rank: a rank without room for the record
     * makes the call fail everywhere. */
    dcoll_status_t st = dcoll_mpi_agree(g, &ok);
    if (st || !ok) {
        free(h);
        return st ? st : dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory "
                                     "for the heap's record on %s", fn,
                                     mine ? "another rank" : "this rank");
    }
    h->bytes = bytes;
    h->stride = page_up(bytes);
    h->id = ++mc->heaps_made;
    h->shared = dcoll_mpi_shm_mode != DCOLL_SHM_NEVER &&
                dcoll_shm_one_node(g);
    if (h->shared) {
        st = map_shared(g, h, fn);
    } else {
        void *p = NULL;
        if (posix_memalign(&p, HEAP_ALIGN, h->stride))
            p = NULL;
        ok = p != NULL;
        mine = ok;
        if (!(st = dcoll_mpi_agree(g, &ok)) && !ok)
            st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %zu "
                             "bytes on %s", fn, bytes,
                             mine ? "another rank" : "this rank");
        if (st)
            free(p);
        h->base = p;
        h->mapped = h->stride;
    }
    if (st) {
        free(h);
        return st;
    }
    h->next = mc->heaps;
    mc->heaps = h;
    *ptr = dcoll_heap_part(h, g->rank);
    return DCOLL_SUCCESS;
}

static struct dcoll_mpi_heap **find(struct dcoll_mpi_comm *mc, int me,
                                    const void *ptr)
{
    struct dcoll_mpi_heap **at = &mc->heaps;
    while (*at && dcoll_heap_part(*at, me) != ptr)
        at = &(*at)->next;
    return at;
}

bool dcoll_mpi_mem_owns(struct dcoll_group *g, const void *ptr)
{
    return *find(dcoll_mpi_of(g), g->rank, ptr) != NULL;
}

static void heap_free(struct dcoll_mpi_heap *h)
{
    if (h->shared)
        munmap(h->base, h->mapped);
    else
        free(h->base);
    free(h);
}

void dcoll_mpi_mem_free(struct dcoll_group *g, void *ptr)
{
    struct dcoll_mpi_heap **at = find(dcoll_mpi_of(g), g->rank, ptr);
    struct dcoll_mpi_heap *h = *at;
    if (!h)
        return;
    *at = h->next;
    heap_free(h);
}

bool dcoll_mpi_heap_shared(const struct dcoll_mpi_comm *mc)
{
    for (const struct dcoll_mpi_heap *h = mc->heaps; h; h = h->next)
        if (h->shared)
            return true;
    return false;
}

void dcoll_mpi_heaps_free(struct dcoll_mpi_comm *mc)
{
    while (mc->heaps) {
        struct dcoll_mpi_heap *h = mc->heaps;
        mc->heaps = h->next;
        heap_free(h);
    }
}

uint64_t dcoll_mpi_heap_at(const struct dcoll_mpi_comm *mc, int me,
                           const void *p, size_t len)
{
    for (const struct dcoll_mpi_heap *h = mc->heaps; h; h = h->next) {
        const char *lo = dcoll_heap_part(h, me);
        if (h->shared && (const char *)p >= lo &&
            (size_t)((const char *)p - lo) <= h->bytes &&
            len <= h->bytes - (size_t)((const char *)p - lo))
            return (uint64_t)h->id << HEAP_OFF_BITS |
                   (uint64_t)((const char *)p - lo);
    }
    return 0;
}

const char *dcoll_mpi_heap_of(const struct dcoll_mpi_comm *mc, int r,
                              uint64_t at)
{
    uint32_t id = (uint32_t)(at >> HEAP_OFF_BITS);
    for (const struct dcoll_mpi_heap *h = mc->heaps; h; h = h->next)
        if (h->id == id)
            return dcoll_heap_part(h, r) +
                   (at & ((UINT64_C(1) << HEAP_OFF_BITS) - 1));
    return NULL;
}
