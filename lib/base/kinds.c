/* The facts of each kind of call, in one place. Spans are by role:
 * [0] for a rank that is not the root, [1] for the root; kinds without a
 * root say the same in both. */
#include "base.h"

#define N DCOLL_SPAN_NONE
#define O DCOLL_SPAN_ONE
#define A DCOLL_SPAN_ALL

/* One entry; what its spans imply is worked out here, once, so that the
 * checks on every call read a byte instead of comparing spans. */
#define KIND(name_, flags_, i0, i1, o0, o1, ip, rule_)                      \
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
        .wide = (((i0) | (i1) | (o0) | (o1)) & A) != 0,                   \
    }

const struct dcoll_kind_info dcoll_kinds[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = KIND("broadcast",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_ONE_BUF |
            DCOLL_KF_ELEMENTWISE,
        N, O, O, N, DCOLL_IP_NONE, NULL),
    [DCOLL_COLL_ALL_REDUCE] = KIND("all_reduce",
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_ELEMENTWISE,
        O, O, O, O, DCOLL_IP_SAME, "sendbuf == recvbuf"),
    [DCOLL_COLL_REDUCE] = KIND("reduce",
        DCOLL_KF_OP | DCOLL_KF_ROOT | DCOLL_KF_COUNTED |
            DCOLL_KF_ELEMENTWISE,
        O, O, N, O, DCOLL_IP_SAME, "sendbuf == recvbuf"),
    [DCOLL_COLL_ALL_GATHER] = KIND("all_gather",
        DCOLL_KF_COUNTED,
        O, O, A, A, DCOLL_IP_SEND_IN_RECV,
        "sendbuf == recvbuf + rank * count"),
    [DCOLL_COLL_GATHER] = KIND("gather",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,
        O, O, N, A, DCOLL_IP_SEND_IN_RECV,
        "sendbuf == recvbuf + root * count"),
    [DCOLL_COLL_SCATTER] = KIND("scatter",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,
        N, A, O, O, DCOLL_IP_RECV_IN_SEND,
        "recvbuf == sendbuf + root * count"),
    [DCOLL_COLL_REDUCE_SCATTER] = KIND("reduce_scatter",
        DCOLL_KF_OP | DCOLL_KF_COUNTED,
        A, A, O, O, DCOLL_IP_RECV_IN_SEND,
        "recvbuf == sendbuf + rank * count"),
    [DCOLL_COLL_ALL_TO_ALL] = KIND("all_to_all",
        DCOLL_KF_COUNTED,
        A, A, A, A, DCOLL_IP_SAME, "sendbuf == recvbuf"),
    [DCOLL_COLL_BARRIER] = KIND("barrier",
        DCOLL_KF_COUNTED,
        N, N, N, N, DCOLL_IP_NONE, NULL),
    [DCOLL_COLL_SEND] = KIND("send",
        DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,
        O, O, N, N, DCOLL_IP_NONE, NULL),
    [DCOLL_COLL_RECV] = KIND("recv",
        DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,
        N, N, O, O, DCOLL_IP_NONE, NULL),
};

const char *dcoll_kind_name(int kind)
{
    if ((unsigned)kind >= DCOLL_COLL_KIND_COUNT_)
        return "unknown";
    return dcoll_kinds[kind].name;
}
