/* train: one data-parallel training loop, the way torch's
 * DistributedDataParallel does it by hand.
 *
 * Every rank holds the same model (a linear model y = W x + b, so three
 * parameter tensors: W, b and a scale s with y = s * (W x) + b) and its own
 * shard of the data. Each step computes the gradients on the local shard,
 * averages them over the ranks with ONE all_reduce_coalesced call (op AVG)
 * instead of one call per tensor, and applies the same update everywhere.
 *
 * The data come from known parameters, so the program checks that the
 * model recovers them, that the loss falls, and that every rank ends with
 * bit-identical parameters (they must: same start, same averaged steps).
 *
 *   mpirun -n 4 ./train            (any number of ranks) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dcoll/dcoll.h>

#define IN 8            /* input features */
#define OUT 3           /* outputs */
#define SAMPLES 256     /* per rank */
#define STEPS 400
#define LR 0.1f

#define TRY(call)                                                            \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        if (st_ != DCOLL_SUCCESS) {                                          \
            fprintf(stderr, "%s failed: %s\n", #call, dcoll_last_error());   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* The parameters the data were made with. */
static float true_w(int o, int i) { return (float)((o + 1) * (i % 3) - i) / IN; }
static float true_b(int o) { return 0.5f * (float)o - 0.25f; }

/* A small deterministic generator, so every run is the same. */
static float noise(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 24) - 0.5f;
}

int main(void)
{
    int rank, size;
    TRY(dcoll_init(NULL));
    TRY(dcoll_group_rank(NULL, &rank));
    TRY(dcoll_group_size(NULL, &size));

    /* This rank's shard: different inputs on every rank. */
    static float x[SAMPLES][IN], y[SAMPLES][OUT];
    unsigned seed = 12345u + 7919u * (unsigned)rank;
    for (int n = 0; n < SAMPLES; n++) {
        for (int i = 0; i < IN; i++)
            x[n][i] = 2 * noise(&seed);
        for (int o = 0; o < OUT; o++) {
            y[n][o] = true_b(o);
            for (int i = 0; i < IN; i++)
                y[n][o] += true_w(o, i) * x[n][i];
        }
    }

    /* The model, the same on every rank, and its gradients. */
    float w[OUT][IN] = {{0}}, b[OUT] = {0}, s = 1.0f;
    float gw[OUT][IN], gb[OUT], gs;
    void *grads[3] = {gw, gb, &gs};
    int64_t counts[3] = {OUT * IN, OUT, 1};
    float first_loss = 0, loss = 0;

    for (int step = 0; step < STEPS; step++) {
        /* Forward and backward on the local shard (mean squared error). */
        memset(gw, 0, sizeof(gw));
        memset(gb, 0, sizeof(gb));
        gs = 0;
        loss = 0;
        for (int n = 0; n < SAMPLES; n++) {
            for (int o = 0; o < OUT; o++) {
                float wx = 0;
                for (int i = 0; i < IN; i++)
                    wx += w[o][i] * x[n][i];
                float err = s * wx + b[o] - y[n][o];
                loss += err * err / (SAMPLES * OUT);
                float g = 2 * err / (SAMPLES * OUT);
                for (int i = 0; i < IN; i++)
                    gw[o][i] += g * s * x[n][i];
                gb[o] += g;
                gs += g * wx;
            }
        }
        /* The data-parallel part: average every gradient over the ranks,
         * all three tensors in one call, in place. */
        TRY(dcoll_all_reduce_coalesced(NULL, grads, counts, 3, DCOLL_FLOAT32,
                                       DCOLL_AVG, NULL, NULL));
        TRY(dcoll_all_reduce(NULL, &loss, &loss, 1, DCOLL_FLOAT32, DCOLL_AVG,
                             NULL, NULL));
        if (step == 0)
            first_loss = loss;
        for (int o = 0; o < OUT; o++) {
            for (int i = 0; i < IN; i++)
                w[o][i] -= LR * gw[o][i];
            b[o] -= LR * gb[o];
        }
        s -= LR * gs;
    }

    /* Checks: the loss fell, the model found the true parameters (up to
     * the scale s, which W absorbs), and all ranks agree bit for bit. */
    float worst = 0;
    for (int o = 0; o < OUT; o++) {
        worst = fmaxf(worst, fabsf(b[o] - true_b(o)));
        for (int i = 0; i < IN; i++)
            worst = fmaxf(worst, fabsf(s * w[o][i] - true_w(o, i)));
    }
    float mine[OUT * IN + OUT + 1], lo[OUT * IN + OUT + 1];
    memcpy(mine, w, sizeof(w));
    memcpy(mine + OUT * IN, b, sizeof(b));
    mine[OUT * IN + OUT] = s;
    TRY(dcoll_all_reduce(NULL, mine, lo, OUT * IN + OUT + 1, DCOLL_FLOAT32,
                         DCOLL_MIN, NULL, NULL));
    int same = memcmp(mine, lo, sizeof(mine)) == 0, all_same;
    TRY(dcoll_all_reduce(NULL, &same, &all_same, 1, DCOLL_INT32, DCOLL_MIN,
                         NULL, NULL));

    int ok = loss < 1e-3f * first_loss && worst < 1e-2f && all_same;
    if (rank == 0)
        printf("train: %d ranks, loss %.3g -> %.3g, worst parameter error "
               "%.2g, ranks agree: %s: %s\n", size, first_loss, loss, worst,
               all_same ? "yes" : "no", ok ? "ok" : "FAILED");
    TRY(dcoll_finalize());
    return ok ? 0 : 1;
}
