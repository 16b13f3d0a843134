/* The facts of each kind of call, in one place, as an initializer: the
 * table in kinds.c, and a static copy in the public path, where the kind
 * of each call is a constant and the compiler folds every look-up. Spans
 * are by role: [0] for a rank that is not the root, [1] for the root;
 * kinds without a root say the same in both. */
#ifndef DCOLL_KINDS_H
#define DCOLL_KINDS_H

#include "base.h"

#define DCOLL_N_ DCOLL_SPAN_NONE
#define DCOLL_O_ DCOLL_SPAN_ONE
#define DCOLL_A_ DCOLL_SPAN_ALL

/* One entry; what its spans imply is worked out here, once, so that the
 * checks on every call read a byte instead of comparing spans. */
#define DCOLL_KIND_(name_, flags_, i0, i1, o0, o1, ip, rule_)                      \
    {                                                                     \
        .name = name_, .fn = "dcoll_" name_, .flags = (flags_),           \
        .in = {i0, i1}, .out = {o0, o1}, .inplace = (ip), .rule = (rule_), \
        .peer = (flags_) & DCOLL_KF_ROOT ? "root"                         \
                : (flags_) & DCOLL_KF_PEER ? ((o0) ? "src" : "dst")       \
                                           : NULL,                        \
        .every = (flags_) & DCOLL_KF_ONE_BUF                              \
                     ? ((o0) || (o1) ? DCOLL_BUF_RECV : DCOLL_BUF_SEND)   \
                     : ((i0) && (i1) ? DCOLL_BUF_SEND : 0) |              \
                           ((o0) && (o1) ? DCOLL_BUF_RECV : 0),           \
        .root_own = (i0) != (i1) ? DCOLL_BUF_SEND                         \
                    : (o0) != (o1) ? DCOLL_BUF_RECV : 0,                  \
        .wide = (((i0) | (i1) | (o0) | (o1)) & DCOLL_A_) != 0,          \
    }

#define DCOLL_KINDS_INIT {                                              \
    [DCOLL_COLL_BROADCAST] = DCOLL_KIND_("broadcast",                             \
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_ONE_BUF |              \
            DCOLL_KF_ELEMENTWISE,                                          \
        DCOLL_N_, DCOLL_O_, DCOLL_O_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_ALL_REDUCE] = DCOLL_KIND_("all_reduce",                           \
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_ELEMENTWISE,             \
        DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_IP_SAME, "sendbuf == recvbuf"),\
    [DCOLL_COLL_REDUCE] = DCOLL_KIND_("reduce",                                   \
        DCOLL_KF_OP | DCOLL_KF_ROOT | DCOLL_KF_COUNTED |                   \
            DCOLL_KF_ELEMENTWISE,                                          \
        DCOLL_O_, DCOLL_O_, DCOLL_N_, DCOLL_O_, DCOLL_IP_SAME, "sendbuf == recvbuf"),\
    [DCOLL_COLL_ALL_GATHER] = DCOLL_KIND_("all_gather",                           \
        DCOLL_KF_COUNTED,                                                  \
        DCOLL_O_, DCOLL_O_, DCOLL_A_, DCOLL_A_, DCOLL_IP_SEND_IN_RECV,     \
        "sendbuf == recvbuf + rank * count"),                              \
    [DCOLL_COLL_GATHER] = DCOLL_KIND_("gather",                                   \
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,           \
        DCOLL_O_, DCOLL_O_, DCOLL_N_, DCOLL_A_, DCOLL_IP_SEND_IN_RECV,     \
        "sendbuf == recvbuf + root * count"),                              \
    [DCOLL_COLL_SCATTER] = DCOLL_KIND_("scatter",                                 \
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,           \
        DCOLL_N_, DCOLL_A_, DCOLL_O_, DCOLL_O_, DCOLL_IP_RECV_IN_SEND,     \
        "recvbuf == sendbuf + root * count"),                              \
    [DCOLL_COLL_REDUCE_SCATTER] = DCOLL_KIND_("reduce_scatter",                   \
        DCOLL_KF_OP | DCOLL_KF_COUNTED,                                    \
        DCOLL_A_, DCOLL_A_, DCOLL_O_, DCOLL_O_, DCOLL_IP_RECV_IN_SEND,     \
        "recvbuf == sendbuf + rank * count"),                              \
    [DCOLL_COLL_ALL_TO_ALL] = DCOLL_KIND_("all_to_all",                           \
        DCOLL_KF_COUNTED,                                                  \
        DCOLL_A_, DCOLL_A_, DCOLL_A_, DCOLL_A_, DCOLL_IP_SAME, "sendbuf == recvbuf"),\
    [DCOLL_COLL_BARRIER] = DCOLL_KIND_("barrier",                                 \
        DCOLL_KF_COUNTED,                                                  \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_SEND] = DCOLL_KIND_("send",                                       \
        DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,                                  \
        DCOLL_O_, DCOLL_O_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_RECV] = DCOLL_KIND_("recv",                                       \
        DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,                                  \
        DCOLL_N_, DCOLL_N_, DCOLL_O_, DCOLL_O_, DCOLL_IP_NONE, NULL),      \
    /* The vector kinds' spans are not used (DCOLL_KF_VEC). */             \
    [DCOLL_COLL_ALL_GATHERV] = DCOLL_KIND_("all_gatherv",                  \
        DCOLL_KF_COUNTED | DCOLL_KF_VEC,                                   \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE,             \
        "sendbuf == recvbuf + displs[rank] elements"),                     \
    [DCOLL_COLL_GATHERV] = DCOLL_KIND_("gatherv",                          \
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_VEC,                   \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE,             \
        "sendbuf == recvbuf + displs[root] elements"),                     \
    [DCOLL_COLL_SCATTERV] = DCOLL_KIND_("scatterv",                        \
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_VEC,                   \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE,             \
        "recvbuf == sendbuf + displs[root] elements"),                     \
    [DCOLL_COLL_ALL_TO_ALLV] = DCOLL_KIND_("all_to_allv",                  \
        DCOLL_KF_COUNTED | DCOLL_KF_VEC,                                   \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE,             \
        "sendbuf == recvbuf"),                                             \
    [DCOLL_COLL_REDUCE_SCATTERV] = DCOLL_KIND_("reduce_scatterv",          \
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_VEC,                     \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE,             \
        "recvbuf == sendbuf + the counts of the ranks before"),            \
    [DCOLL_COLL_SCAN] = DCOLL_KIND_("scan",                                \
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_ELEMENTWISE,             \
        DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_IP_SAME,             \
        "sendbuf == recvbuf"),                                             \
    [DCOLL_COLL_EXSCAN] = DCOLL_KIND_("exscan",                            \
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_ELEMENTWISE,             \
        DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_O_, DCOLL_IP_SAME,             \
        "sendbuf == recvbuf"),                                             \
    /* So are the neighbourhood kinds' (DCOLL_KF_NEIGHBOR). */            \
    [DCOLL_COLL_NEIGHBOR_ALL_GATHER] = DCOLL_KIND_("neighbor_all_gather",  \
        DCOLL_KF_COUNTED | DCOLL_KF_NEIGHBOR,                              \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV] = DCOLL_KIND_("neighbor_all_to_allv",\
        DCOLL_KF_COUNTED | DCOLL_KF_NEIGHBOR,                              \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW] = DCOLL_KIND_("neighbor_all_to_allw",\
        DCOLL_KF_COUNTED | DCOLL_KF_NEIGHBOR,                              \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_NEW_GROUP] = DCOLL_KIND_("new_group", DCOLL_KF_COUNTED,    \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_SPLIT_GROUP] = DCOLL_KIND_("split_group", DCOLL_KF_COUNTED,\
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_MEM_ALLOC] = DCOLL_KIND_("mem_alloc", DCOLL_KF_COUNTED,    \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
    [DCOLL_COLL_MEM_FREE] = DCOLL_KIND_("mem_free", DCOLL_KF_COUNTED,      \
        DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_N_, DCOLL_IP_NONE, NULL),      \
}

#endif
