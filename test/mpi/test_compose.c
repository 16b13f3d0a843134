/* The candidates a tuning table may pick (mpi_layer/compose.c): every
 * way of all_reduce, reduce_scatter, reduce, broadcast and all_gather
 * gives the exact result (and all_reduce's the same bits on every rank)
 * for integer and floating types, every op MPI has for them, odd counts,
 * counts below the group size, every root, in place and not. Run under
 * mpirun with 1 to 4 ranks, or --sizes for every size inside one job
 * (the worlds of test/sizes.h, each MPI's own split). The inputs are small integers (and 1s and 2s
 * for PROD), so every order of a sum is exact and a result can be
 * checked against the sum computed here. */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
/* The world the checks run on: its communicator, this rank's place in
 * it, its size. */
static MPI_Comm comm;
static int me, size;


enum type { INT32, INT64, FLOAT32, FLOAT64, NTYPES };
static const char *const type_names[NTYPES] = {"int32", "int64", "float32",
                                               "float64"};
static MPI_Datatype mpi_type(enum type t)
{
    return t == INT32 ? MPI_INT32_T : t == INT64 ? MPI_INT64_T
           : t == FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;
}
static size_t type_size(enum type t)
{
    return t == INT32 || t == FLOAT32 ? 4 : 8;
}

/* Rank r's element i for op: 1 or 2 for PROD, else up to 9 (negative
 * too, for MIN and MAX). */
static long val(int r, int i, MPI_Op op)
{
    if (op == MPI_PROD)
        return 1 + ((r + i) % 5 == 0);
    return (long)((r * 7 + i * 3) % 19) - 9;
}

static void put(void *buf, enum type t, int i, long v)
{
    switch (t) {
    case INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case INT64: ((int64_t *)buf)[i] = v; break;
    case FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

static long combine(MPI_Op op, long a, long b)
{
    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MAX)
        return a > b ? a : b;
    if (op == MPI_MIN)
        return a < b ? a : b;
    if (op == MPI_BAND)
        return a & b;
    if (op == MPI_BOR)
        return a | b;
    return a ^ b;   /* MPI_BXOR */
}

/* Element i of the reduction over every rank. */
static long want(int i, MPI_Op op)
{
    long v = val(0, i, op);
    for (int r = 1; r < size; r++)
        v = combine(op, v, val(r, i, op));
    return v;
}

/* Every rank holds the same bytes of buf. */
static void same_everywhere(const void *buf, size_t bytes, const char *what)
{
    unsigned char *all = malloc(bytes * (size_t)size + 1);
    MPI_Allgather(buf, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                  comm);
    for (int r = 1; r < size; r++)
        CHECK(!memcmp(all, all + bytes * (size_t)r, bytes),
              "%s: rank %d's result differs from rank 0's", what, r);
    free(all);
}

static void all_reduce(enum dcoll_way way, enum type t, MPI_Op op,
                       const char *opname, int n, int in_place)
{
    size_t e = type_size(t);
    char *in = malloc(e * (size_t)n + 1), *out = malloc(e * (size_t)n + 1);
    char *exp = malloc(e * (size_t)n + 1), what[160];
    for (int i = 0; i < n; i++) {
        put(in_place ? out : in, t, i, val(me, i, op));
        put(exp, t, i, want(i, op));
    }
    snprintf(what, sizeof(what), "all_reduce by %s, %s %s, %d element(s)%s",
             dcoll_way_names[way], type_names[t], opname, n,
             in_place ? ", in place" : "");
    int rc = dcoll_compose_all_reduce(way, in_place ? MPI_IN_PLACE : in, out,
                                      n, mpi_type(t), e, op, comm,
                                      me, size);
    CHECK(rc == MPI_SUCCESS, "%s: MPI error %d", what, rc);
    CHECK(!memcmp(out, exp, e * (size_t)n), "%s: wrong result", what);
    same_everywhere(out, e * (size_t)n, what);
    free(in);
    free(out);
    free(exp);
}

static void reduce_scatter(enum dcoll_way way, enum type t, MPI_Op op,
                           const char *opname, int n, int in_place)
{
    size_t e = type_size(t);
    int whole = n * size;
    char *in = malloc(e * (size_t)whole + 1);
    char *out = malloc(e * (size_t)(in_place ? whole : n) + 1);
    char *exp = malloc(e * (size_t)n + 1), what[160];
    for (int i = 0; i < whole; i++)
        put(in_place ? out : in, t, i, val(me, i, op));
    for (int i = 0; i < n; i++)
        put(exp, t, i, want(me * n + i, op));
    snprintf(what, sizeof(what), "reduce_scatter by %s, %s %s, %d "
             "element(s) a rank%s", dcoll_way_names[way], type_names[t],
             opname, n, in_place ? ", in place" : "");
    int rc = dcoll_compose_reduce_scatter(way, in_place ? MPI_IN_PLACE : in,
                                          out, n, mpi_type(t), e, op,
                                          comm, me, size);
    CHECK(rc == MPI_SUCCESS, "%s: MPI error %d", what, rc);
    CHECK(!memcmp(out, exp, e * (size_t)n), "%s: wrong block", what);
    free(in);
    free(out);
    free(exp);
}

/* Rooted at root; in place on every rank (the root's input in out, the
 * others' in in: dcoll's in-place reduce passes the buffer as both). */
static void reduce(enum dcoll_way way, enum type t, MPI_Op op,
                   const char *opname, int n, int in_place, int root)
{
    size_t e = type_size(t);
    char *in = malloc(e * (size_t)n + 1), *out = malloc(e * (size_t)n + 1);
    char *exp = malloc(e * (size_t)n + 1), what[160];
    for (int i = 0; i < n; i++) {
        put(in, t, i, val(me, i, op));
        put(out, t, i, val(me, i, op));
        put(exp, t, i, want(i, op));
    }
    snprintf(what, sizeof(what), "reduce to %d by %s, %s %s, %d "
             "element(s)%s", root, dcoll_way_names[way], type_names[t],
             opname, n, in_place ? ", in place" : "");
    bool at_root = me == root;
    int rc = dcoll_compose_reduce(way, in_place && at_root ? MPI_IN_PLACE
                                                           : in,
                                  at_root ? out : NULL, n, mpi_type(t), e,
                                  op, root, comm, me, size);
    CHECK(rc == MPI_SUCCESS, "%s: MPI error %d", what, rc);
    if (at_root)
        CHECK(!memcmp(out, exp, e * (size_t)n), "%s: wrong result", what);
    free(in);
    free(out);
    free(exp);
}

static void broadcast(enum dcoll_way way, enum type t, int n, int root)
{
    size_t e = type_size(t);
    char *buf = malloc(e * (size_t)n + 1), *exp = malloc(e * (size_t)n + 1);
    char what[160];
    for (int i = 0; i < n; i++) {
        put(exp, t, i, val(root, i, MPI_SUM));
        put(buf, t, i, me == root ? val(root, i, MPI_SUM) : 99);
    }
    snprintf(what, sizeof(what), "broadcast from %d by %s, %s, %d "
             "element(s)", root, dcoll_way_names[way], type_names[t], n);
    int rc = dcoll_compose_broadcast(way, buf, n, mpi_type(t), e, root,
                                     comm, me, size);
    CHECK(rc == MPI_SUCCESS, "%s: MPI error %d", what, rc);
    CHECK(!memcmp(buf, exp, e * (size_t)n), "%s: wrong result", what);
    free(buf);
    free(exp);
}

static void all_gather(enum dcoll_way way, enum type t, int n, int in_place)
{
    size_t e = type_size(t), whole = (size_t)n * (size_t)size;
    char *in = malloc(e * (size_t)n + 1), *out = malloc(e * whole + 1);
    char *exp = malloc(e * whole + 1), what[160];
    for (size_t i = 0; i < whole; i++) {
        int r = (int)(i / (size_t)n), k = (int)(i % (size_t)n);
        put(exp, t, (int)i, val(r, k, MPI_SUM));
        put(out, t, (int)i, r == me && in_place ? val(r, k, MPI_SUM)
                                                    : 99);
    }
    for (int i = 0; i < n; i++)
        put(in, t, i, val(me, i, MPI_SUM));
    snprintf(what, sizeof(what), "all_gather by %s, %s, %d element(s) a "
             "rank%s", dcoll_way_names[way], type_names[t], n,
             in_place ? ", in place" : "");
    int rc = dcoll_compose_all_gather(way, in_place ? MPI_IN_PLACE : in, out,
                                      n, mpi_type(t), e, comm,
                                      me, size);
    CHECK(rc == MPI_SUCCESS, "%s: MPI error %d", what, rc);
    CHECK(!memcmp(out, exp, e * whole), "%s: wrong result", what);
    free(in);
    free(out);
    free(exp);
}

static void body(void)
{
    static const struct { MPI_Op op; const char *name; bool ints; } ops[] = {
        {MPI_SUM, "sum", false},   {MPI_PROD, "prod", false},
        {MPI_MAX, "max", false},   {MPI_MIN, "min", false},
        {MPI_BAND, "band", true},  {MPI_BOR, "bor", true},
        {MPI_BXOR, "bxor", true},
    };
    const int counts[] = {1, 3, 37, 1000};
    for (int t = 0; t < NTYPES; t++)
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            if (ops[o].ints && (t == FLOAT32 || t == FLOAT64))
                continue;
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int ip = 0; ip < 2; ip++) {
                    int n = counts[c];
                    for (int w = DCOLL_WAY_MPI; w <= DCOLL_WAY_RS_AG; w++)
                        all_reduce((enum dcoll_way)w, (enum type)t,
                                   ops[o].op, ops[o].name, n, ip);
                    reduce_scatter(DCOLL_WAY_MPI, (enum type)t, ops[o].op,
                                   ops[o].name, n, ip);
                    for (int w = DCOLL_WAY_REDUCE_SCATTER;
                         w <= DCOLL_WAY_ALLREDUCE_COPY; w++)
                        reduce_scatter((enum dcoll_way)w, (enum type)t,
                                       ops[o].op, ops[o].name, n, ip);
                    /* Rooted at the last rank: not where the blocks
                     * start. */
                    for (int w = 0; w < 2; w++)
                        reduce(w ? DCOLL_WAY_RS_GATHER : DCOLL_WAY_MPI,
                               (enum type)t, ops[o].op, ops[o].name, n, ip,
                               size - 1);
                }
        }
    /* What moves without reducing, from every root: a 4- and an 8-byte
     * type (the bits are only moved). */
    for (int t = INT32; t < NTYPES; t += FLOAT64 - INT32)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int w = 0; w < 2; w++) {
                int n = counts[c];
                for (int root = 0; root < size; root++)
                    broadcast(w ? DCOLL_WAY_SCATTER_AG : DCOLL_WAY_MPI,
                              (enum type)t, n, root);
                for (int ip = 0; ip < 2; ip++)
                    all_gather(w ? DCOLL_WAY_GATHER_BCAST : DCOLL_WAY_MPI,
                               (enum type)t, n, ip);
            }
}

/* Each world --sizes names (test/sizes.h's names) as a split of MPI's
 * world; without it, MPI's world alone. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char list[128], said[128];
    snprintf(list, sizeof(list), "%d", n);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes")) {   /* as test/sizes.h names them */
            size_t at = (size_t)snprintf(list, sizeof(list), "%d,%dr", n, n);
            if (n >= 3)
                at += (size_t)snprintf(list + at, sizeof(list) - at,
                                       ",%dg,2", n - 1);
            if (n >= 2)
                snprintf(list + at, sizeof(list) - at, ",1");
        } else if (!strncmp(argv[i], "--sizes=", 8)) {
            snprintf(list, sizeof(list), "%s", argv[i] + 8);
        }
    }
    memcpy(said, list, sizeof(said));
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s;
         s = strtok_r(NULL, ",", &save)) {
        int m[T_MAXW], whole = 0, k = t_world_members(s, n, m, &whole);
        me = -1;
        for (int i = 0; i < k; i++)
            if (m[i] == t_rank)
                me = i;
        CHECK(k > 0, "--sizes: \"%s\" is no world of a %d-rank job", s, n);
        MPI_Comm_split(MPI_COMM_WORLD, me >= 0 ? 0 : MPI_UNDEFINED, me,
                       &comm);
        if (me >= 0) {
            int before = t_failures;
            size = k;
            body();
            if (t_failures > before)
                fprintf(stderr, "[rank %d] the failures above were on world "
                        "%s (%d ranks)\n", t_rank, s, k);
            MPI_Comm_free(&comm);
        }
    }
    int bad = 0;
    MPI_Allreduce(&t_failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (t_rank == 0)
        printf("compose on worlds %s: %s\n", said, bad ? "FAIL" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
