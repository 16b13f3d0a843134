/* The facts of each kind of call, in one place. Spans are by role:
 * [0] for a rank that is not the root, [1] for the root; kinds without a
 * root say the same in both. */
#include "base.h"

#define N DCOLL_SPAN_NONE
#define O DCOLL_SPAN_ONE
#define A DCOLL_SPAN_ALL

const struct dcoll_kind_info dcoll_kinds[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = {
        "broadcast", "dcoll_broadcast",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_ONE_BUF |
            DCOLL_KF_ELEMENTWISE,
        {N, O}, {O, N}, DCOLL_IP_NONE, NULL},
    [DCOLL_COLL_ALL_REDUCE] = {
        "all_reduce", "dcoll_all_reduce",
        DCOLL_KF_OP | DCOLL_KF_COUNTED | DCOLL_KF_ELEMENTWISE,
        {O, O}, {O, O}, DCOLL_IP_SAME, "sendbuf == recvbuf"},
    [DCOLL_COLL_REDUCE] = {
        "reduce", "dcoll_reduce",
        DCOLL_KF_OP | DCOLL_KF_ROOT | DCOLL_KF_COUNTED |
            DCOLL_KF_ELEMENTWISE,
        {O, O}, {N, O}, DCOLL_IP_SAME, "sendbuf == recvbuf"},
    [DCOLL_COLL_ALL_GATHER] = {
        "all_gather", "dcoll_all_gather", DCOLL_KF_COUNTED,
        {O, O}, {A, A}, DCOLL_IP_SEND_IN_RECV,
        "sendbuf == recvbuf + rank * count"},
    [DCOLL_COLL_GATHER] = {
        "gather", "dcoll_gather",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,
        {O, O}, {N, A}, DCOLL_IP_SEND_IN_RECV,
        "sendbuf == recvbuf + root * count"},
    [DCOLL_COLL_SCATTER] = {
        "scatter", "dcoll_scatter",
        DCOLL_KF_ROOT | DCOLL_KF_COUNTED | DCOLL_KF_STRICT_ROOT,
        {N, A}, {O, O}, DCOLL_IP_RECV_IN_SEND,
        "recvbuf == sendbuf + root * count"},
    [DCOLL_COLL_REDUCE_SCATTER] = {
        "reduce_scatter", "dcoll_reduce_scatter",
        DCOLL_KF_OP | DCOLL_KF_COUNTED,
        {A, A}, {O, O}, DCOLL_IP_RECV_IN_SEND,
        "recvbuf == sendbuf + rank * count"},
    [DCOLL_COLL_ALL_TO_ALL] = {
        "all_to_all", "dcoll_all_to_all", DCOLL_KF_COUNTED,
        {A, A}, {A, A}, DCOLL_IP_SAME, "sendbuf == recvbuf"},
    [DCOLL_COLL_BARRIER] = {
        "barrier", "dcoll_barrier", DCOLL_KF_COUNTED,
        {N, N}, {N, N}, DCOLL_IP_NONE, NULL},
    [DCOLL_COLL_SEND] = {
        "send", "dcoll_send", DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,
        {O, O}, {N, N}, DCOLL_IP_NONE, NULL},
    [DCOLL_COLL_RECV] = {
        "recv", "dcoll_recv", DCOLL_KF_PEER | DCOLL_KF_ONE_BUF,
        {N, N}, {O, O}, DCOLL_IP_NONE, NULL},
};

const char *dcoll_kind_name(int kind)
{
    if ((unsigned)kind >= DCOLL_COLL_KIND_COUNT_)
        return "unknown";
    return dcoll_kinds[kind].name;
}
