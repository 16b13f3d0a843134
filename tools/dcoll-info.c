/* dcoll-info: what dcoll sees on this machine, for bug reports and for
 * checking a job's placement: the MPI library, the backends and the CUDA
 * plugin (CUDA and NCCL versions, GPUs or why there are none), the GPUs on
 * the PCI bus with their NUMA nodes (hwloc), and each rank's host, local
 * rank and CPU binding.
 *
 *   mpirun -n 4 dcoll-info */
#include <hwloc.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dcoll/dcoll.h"

#define LINE 512

/* NVIDIA display and 3D controllers on the PCI bus, with their NUMA node. */
static void pci_gpus(hwloc_topology_t topo)
{
    int found = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o;
         o = hwloc_get_next_pcidev(topo, o)) {
        struct hwloc_pcidev_attr_s *pci = &o->attr->pcidev;
        unsigned cls = pci->class_id >> 8;
        if (pci->vendor_id != 0x10de || (cls != 0x03))
            continue;
        hwloc_obj_t up = hwloc_get_non_io_ancestor_obj(topo, o);
        char nodes[64] = "?";
        if (up && up->nodeset)
            hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), up->nodeset);
        printf("  GPU %04x:%02x:%02x.%01x  device 0x%04x  NUMA node %s\n",
               pci->domain, pci->bus, pci->dev, pci->func, pci->device_id,
               nodes);
        found++;
    }
    if (!found)
        printf("  none on the PCI bus\n");
}

/* This rank's line: host, local rank, the CPUs it is bound to. */
static void my_line(hwloc_topology_t topo, char *out, size_t len)
{
    char host[64] = "?", cpus[128] = "?", nodes[64] = "?";
    int rank = -1, local = -1, nlocal = -1, gpu = -1;
    gethostname(host, sizeof(host));
    dcoll_group_rank(NULL, &rank);
    dcoll_local_rank(&local, &nlocal);
    dcoll_device(&gpu);
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), nset = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), set);
        hwloc_cpuset_to_nodeset(topo, set, nset);
        hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), nset);
    }
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(nset);
    char dev[16] = "none";
    if (gpu >= 0)
        snprintf(dev, sizeof(dev), "%d", gpu);
    snprintf(out, len, "rank %d: host %s, local rank %d of %d, bound to "
             "PUs %s (NUMA %s), GPU %s", rank, host, local, nlocal, cpus,
             nodes, dev);
}

/* The transports the library's route table names, as its own refusal of
 * a name it has none for lists them ("... (known: mpi, nccl)"): no list
 * here to fall behind the table. */
static int transport_names(char (*names)[32], int max)
{
    int avail = 0, n = 0;
    const char *text = NULL;
    if (dcoll_backend_status("?", &avail, &text) == DCOLL_SUCCESS)
        return 0;
    const char *at = strstr(dcoll_last_error(), "(known: ");
    if (!at)
        return 0;
    at += strlen("(known: ");
    while (n < max && *at && *at != ')') {
        size_t len = strcspn(at, ",)");
        if (len > 0 && len < sizeof(names[0])) {
            memcpy(names[n], at, len);
            names[n++][len] = '\0';
        }
        at += len;
        at += strspn(at, ", ");
    }
    return n;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    if (argc > 1) {
        bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
        if (!help && strcmp(argv[1], "--version")) {
            fprintf(stderr, "dcoll-info: unknown argument '%s' (--help)\n",
                    argv[1]);
            return 2;
        }
        if (help)
            printf("usage: dcoll-info [--help | --version]\n"
                   "Under mpirun, srun or dcollrun (or alone): what dcoll "
                   "finds here: the MPI library, each\nbackend and whether "
                   "it can serve collectives, the GPUs on the PCI bus, and "
                   "each rank's\nhost, local rank, CPU binding and GPU.\n");
        else
            printf("dcoll-info (dcoll) %d.%d.%d\n", DCOLL_API_VERSION_MAJOR,
                   DCOLL_API_VERSION_MINOR, DCOLL_API_VERSION_PATCH);
        return 0;
    }
    /* dcoll starts MPI: under dcollrun or torchrun it joins the processes
     * into one world, where an MPI_Init of ours would leave each alone. */
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll-info: %s\n", dcoll_last_error());
        return 1;
    }
    MPI_Query_thread(&provided);
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);

    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_load(topo);

    char line[LINE] = "", *all = NULL;
    my_line(topo, line, sizeof(line));
    if (rank == 0)
        all = malloc((size_t)size * LINE);
    dcoll_gather(NULL, line, all, LINE, DCOLL_INT8, 0, NULL, NULL);

    if (rank == 0) {
        int maj, min, pat, mv, ms, len;
        char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
        dcoll_version(&maj, &min, &pat);
        MPI_Get_version(&mv, &ms);
        MPI_Get_library_version(mpi, &len);
        mpi[strcspn(mpi, "\n")] = '\0';
        printf("dcoll %d.%d.%d (header %d.%d.%d)\n", maj, min, pat,
               DCOLL_API_VERSION_MAJOR, DCOLL_API_VERSION_MINOR,
               DCOLL_API_VERSION_PATCH);
        printf("MPI: %s (standard %d.%d, thread level %d)\n", mpi, mv, ms,
               provided);
        printf("hwloc: %s\n", HWLOC_VERSION);
        printf("backends:\n");
        char names[8][32];
        int n = transport_names(names, 8);
        for (int i = 0; i < n; i++) {
            int avail = 0;
            const char *text = "";
            dcoll_backend_status(names[i], &avail, &text);
            printf("  %-5s %s: %s\n", names[i],
                   avail ? "available" : "not available", text);
        }
        printf("GPUs (hwloc):\n");
        pci_gpus(topo);
        printf("%d rank(s):\n", size);
        for (int r = 0; r < size; r++)
            printf("  %s\n", all + (size_t)r * LINE);
        free(all);
    }
    hwloc_topology_destroy(topo);
    dcoll_finalize();   /* ends the MPI it started */
    return 0;
}
