/* dcoll-perf's output: nccl-tests' table on the terminal, with the raw MPI
 * call's columns and the ratio beside dcoll's; JSON or CSV with -o. */
#include <stdio.h>
#include <string.h>
#include "perf.h"

const char *perf_dtype_name(dcoll_dtype_t t)
{
    static const char *const n[DCOLL_DTYPE_COUNT_] = {
        "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
        "bfloat16", "float32", "float64", "bool", "logical", "complex64",
        "complex128", "float32int", "float64int", "int32int", "2float32",
        "2float64",
    };
    return (unsigned)t < DCOLL_DTYPE_COUNT_ ? n[t] : "?";
}

const char *perf_op_name(dcoll_op_t op)
{
    static const char *const n[DCOLL_OP_COUNT_] = {
        "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land",
        "lor", "lxor", "minloc", "maxloc",
    };
    return (unsigned)op < DCOLL_OP_COUNT_ ? n[op] : "?";
}

void perf_header(const struct perf_opts *o, const struct perf_coll *k, int n,
                 const char *group)
{
    if (o->calibrate)
        printf("#\n# CALIBRATION (-A): both sides are the raw MPI call; the "
               "ratio shows the noise floor\n");
    printf("#\n# %s on %d rank(s) of %s, %s%s%s, %s%s, %d round(s) "
           "(median shown)\n",
           k->name, n, group, o->async ? "async + wait" : "blocking",
           o->said ? ", memory said (-K)" : "",
           o->ordered ? ", stream-ordered + the stream's sync (-O)" : "",
           perf_dtype_name(o->dtype),
           o->dtype == DCOLL_FLOAT16 || o->dtype == DCOLL_BFLOAT16
               ? " (raw: float32 of the same bytes, MPI has no 16-bit float)"
               : "",
           o->rounds);
    if (o->plan) {
        printf("# -P: plan = dcoll's plan started%s; raw = %s; "
               "pers = MPI's persistent request, MPI_Start + MPI_Wait "
               "(blank: none here); ratios raw/plan, pers/plan, and the "
               "faster of the two / plan\n",
               o->async ? " with a work + waited" : "",
               o->cuda ? "the GPU's raw side, above" :
               o->async ? "MPI's nonblocking call" : "MPI's blocking call");
        printf("# %10s %12s %8s %6s %5s %10s %7s %10s %10s %7s %7s %7s\n",
               "size(B)", "count", "type", "redop", "root", "plan(us)",
               "#wrong", "raw(us)", "pers(us)", "r_raw", "r_pers",
               "r_best");
        return;
    }
    if (k->coalesced) {
        printf("# %d tensors; raw = packed by hand into one buffer, one MPI "
               "call, unpacked; separate = one dcoll call per tensor\n",
               o->ntensors);
        printf("# %10s %12s %8s %6s %10s %8s %8s %7s %10s %8s %7s %10s %7s\n",
               "size(B)", "count", "type", "redop", "time(us)", "algbw",
               "busbw", "#wrong", "raw(us)", "busbw", "ratio", "sep(us)",
               "speedup");
        return;
    }
    if (o->bound)
        printf("# -M: memcpy = GB/s of every rank's memcpy of the size at "
               "once, in the same rounds; share = busbw / memcpy, dcoll's "
               "then raw's\n");
    printf("# %10s %12s %8s %6s %5s %10s %8s %8s %7s %10s %8s %8s %7s %8s",
           "size(B)", "count", "type", "redop", "root", "time(us)", "algbw",
           "busbw", "#wrong", "raw(us)", "algbw", "busbw", "ratio",
           "+us");
    if (o->bound)
        printf(" %8s %7s %7s", "memcpy", "share", "r_share");
    printf("\n");
}

static void wrong_text(char *buf, size_t len, long wrong)
{
    if (wrong == -1)
        snprintf(buf, len, "N/A");
    else if (wrong < 0)
        snprintf(buf, len, "FAIL");
    else
        snprintf(buf, len, "%ld", wrong);
}

/* Times below 10 ms with three decimals: small-call overheads are tens
 * of nanoseconds. */
static const char *us_text(char *buf, size_t len, double us)
{
    snprintf(buf, len, us < 1e4 ? "%.3f" : "%.1f", us);
    return buf;
}

void perf_print(const struct perf_row *r, bool coalesced, bool plan)
{
    char t1[32], t2[32], t3[32];
    char w[24];
    wrong_text(w, sizeof(w), r->wrong);
    if (plan) {
        char rp[16] = "-";
        if (r->pers_us > 0)
            snprintf(rp, sizeof(rp), "%.3f", r->pers_ratio);
        printf("  %10zu %12lld %8s %6s %5d %10s %7s %10s %10s %7.3f %7s "
               "%7.3f\n",
               r->size, (long long)r->count, r->type, r->op, r->root,
               us_text(t1, sizeof(t1), r->us), w,
               us_text(t2, sizeof(t2), r->raw_us),
               r->pers_us > 0 ? us_text(t3, sizeof(t3), r->pers_us) : "-",
               r->ratio, rp, r->best_ratio);
        return;
    }
    if (coalesced) {
        printf("  %10zu %12lld %8s %6s %10s %8.3f %8.3f %7s %10s %8.3f "
               "%7.3f %10s %7.2f\n",
               r->size, (long long)r->count, r->type, r->op,
               us_text(t1, sizeof(t1), r->us), r->algbw, r->busbw, w,
               us_text(t2, sizeof(t2), r->raw_us), r->raw_busbw, r->ratio,
               us_text(t3, sizeof(t3), r->sep_us),
               r->us > 0 ? r->sep_us / r->us : 0.0);
        return;
    }
    printf("  %10zu %12lld %8s %6s %5d %10s %8.3f %8.3f %7s %10s %8.3f "
           "%8.3f %7.3f %8.3f",
           r->size, (long long)r->count, r->type, r->op, r->root,
           us_text(t1, sizeof(t1), r->us), r->algbw, r->busbw, w,
           us_text(t2, sizeof(t2), r->raw_us), r->raw_algbw, r->raw_busbw,
           r->ratio, r->added_us);
    if (r->mcpy_gbs > 0)
        printf(" %8.2f %6.1f%% %6.1f%%", r->mcpy_gbs,
               100 * r->busbw / r->mcpy_gbs, 100 * r->raw_busbw / r->mcpy_gbs);
    printf("\n");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int perf_write(const char *path, const struct perf_row *rows, int nrows,
               int nranks)
{
    bool json = ends_with(path, ".json");
    if (!json && !ends_with(path, ".csv")) {
        fprintf(stderr, "dcoll-perf: -o %s: the name must end in .json or "
                ".csv\n", path);
        return 1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    if (!json)
        fprintf(f, "coll,ranks,size,count,type,op,root,time_us,algbw,busbw,"
                "wrong,raw_time_us,raw_algbw,raw_busbw,ratio,ntensors,"
                "separate_us,added_us,pers_time_us,pers_ratio,best_ratio,"
                "memcpy_gbs\n");
    else
        fprintf(f, "[\n");
    for (int i = 0; i < nrows; i++) {
        const struct perf_row *r = &rows[i];
        if (json)
            fprintf(f, "  {\"coll\": \"%s\", \"ranks\": %d, \"size\": %zu, "
                    "\"count\": %lld, \"type\": \"%s\", \"op\": \"%s\", "
                    "\"root\": %d, \"time_us\": %.3f, \"algbw\": %.6f, "
                    "\"busbw\": %.6f, \"wrong\": %ld, \"raw_time_us\": %.3f, "
                    "\"raw_algbw\": %.6f, \"raw_busbw\": %.6f, "
                    "\"ratio\": %.6f, \"ntensors\": %d, "
                    "\"separate_us\": %.3f, \"added_us\": %.3f, "
                    "\"pers_time_us\": %.3f, \"pers_ratio\": %.6f, "
                    "\"best_ratio\": %.6f, \"memcpy_gbs\": %.6f}%s\n",
                    r->coll, nranks, r->size, (long long)r->count, r->type,
                    r->op, r->root, r->us, r->algbw, r->busbw, r->wrong,
                    r->raw_us, r->raw_algbw, r->raw_busbw, r->ratio,
                    r->ntensors, r->sep_us, r->added_us, r->pers_us,
                    r->pers_ratio, r->best_ratio, r->mcpy_gbs,
                    i + 1 < nrows ? "," : "");
        else
            fprintf(f, "%s,%d,%zu,%lld,%s,%s,%d,%.3f,%.6f,%.6f,%ld,%.3f,"
                    "%.6f,%.6f,%.6f,%d,%.3f,%.3f,%.3f,%.6f,%.6f,%.6f\n",
                    r->coll, nranks, r->size, (long long)r->count, r->type,
                    r->op, r->root, r->us, r->algbw, r->busbw, r->wrong,
                    r->raw_us, r->raw_algbw, r->raw_busbw, r->ratio,
                    r->ntensors, r->sep_us, r->added_us, r->pers_us,
                    r->pers_ratio, r->best_ratio, r->mcpy_gbs);
    }
    if (json)
        fprintf(f, "]\n");
    if (fclose(f)) {
        perror(path);
        return 1;
    }
    return 0;
}
