/* Teams: the ranks of a group that share one GPU (the same identity,
 * which implies the same host), each led by its lowest group rank. A
 * group whose teams all have one rank is NCCL's case; a team of several
 * is the IPC transport's (issue 49). No CUDA here, so it is unit-tested
 * anywhere. */
#ifndef DCOLL_GPU_TEAM_H
#define DCOLL_GPU_TEAM_H

#include <stdbool.h>
#include <stddef.h>

struct dcoll_teams {
    int nranks;
    int n;          /* teams, numbered in the order of their leaders */
    int *of;        /* [nranks]: each rank's team */
    int *index;     /* [nranks]: each rank's place in its team */
    int *size;      /* [n]: ranks in each team */
    int *leader;    /* [n]: each team's lowest group rank */
    bool equal;     /* every team the same size: rails are possible */
};

/* The teams of nranks ranks from each rank's GPU identity (idlen bytes
 * each, in group rank order; every rank computes the same). 0, or -1
 * without memory (t then holds nothing). */
int dcoll_teams_make(const unsigned char *ids, size_t idlen, int nranks,
                     struct dcoll_teams *t);
void dcoll_teams_free(struct dcoll_teams *t);

/* The group ranks of team k, in their order in it, into out (size[k]). */
void dcoll_teams_members(const struct dcoll_teams *t, int k, int *out);

#endif
