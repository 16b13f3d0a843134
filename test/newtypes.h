/* Values of the API 1.7 types for tests: complex, bool, logical and the
 * (value, index) pairs (and the integer types the logical ops take),
 * written and compared element by element (a pair struct's padding is no
 * one's). Needs only dcoll.h. */
#ifndef DCOLL_TEST_NEWTYPES_H
#define DCOLL_TEST_NEWTYPES_H

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "dcoll/dcoll.h"

static inline size_t nt_size(dcoll_dtype_t dt)
{
    size_t s = 0;
    dcoll_dtype_size(dt, &s);
    return s;
}

/* An integer, bool or logical element. */
static inline void nt_set_int(void *buf, dcoll_dtype_t dt, int64_t k, int v)
{
    switch (dt) {
    case DCOLL_INT8: ((int8_t *)buf)[k] = (int8_t)v; break;
    case DCOLL_UINT8: ((uint8_t *)buf)[k] = (uint8_t)v; break;
    case DCOLL_INT32: ((int32_t *)buf)[k] = v; break;
    case DCOLL_UINT32: ((uint32_t *)buf)[k] = (uint32_t)v; break;
    case DCOLL_INT64: ((int64_t *)buf)[k] = v; break;
    case DCOLL_UINT64: ((uint64_t *)buf)[k] = (uint64_t)v; break;
    case DCOLL_BOOL: ((bool *)buf)[k] = v != 0; break;
    default: ((int32_t *)buf)[k] = v != 0; break;   /* logical */
    }
}

static inline int nt_is_complex(dcoll_dtype_t dt)
{
    return dt == DCOLL_COMPLEX64 || dt == DCOLL_COMPLEX128;
}

/* A pair type's element k as (value, index), through its C struct. */
#define PAIR_AT(V, X, buf, k) (((struct { V v; X i; } *)(buf)) + (k))
static inline void nt_pair_set(void *buf, dcoll_dtype_t dt, int k, double v, int i)
{
    switch (dt) {
    case DCOLL_FLOAT32_INT:
        PAIR_AT(float, int, buf, k)->v = (float)v;
        PAIR_AT(float, int, buf, k)->i = i;
        break;
    case DCOLL_FLOAT64_INT:
        PAIR_AT(double, int, buf, k)->v = v;
        PAIR_AT(double, int, buf, k)->i = i;
        break;
    case DCOLL_INT32_INT:
        PAIR_AT(int, int, buf, k)->v = (int)v;
        PAIR_AT(int, int, buf, k)->i = i;
        break;
    case DCOLL_2FLOAT32:
        PAIR_AT(float, float, buf, k)->v = (float)v;
        PAIR_AT(float, float, buf, k)->i = (float)i;
        break;
    default:
        PAIR_AT(double, double, buf, k)->v = v;
        PAIR_AT(double, double, buf, k)->i = i;
        break;
    }
}

static inline void nt_pair_get(const void *buf, dcoll_dtype_t dt, int k, double *v,
                     double *i)
{
    switch (dt) {
    case DCOLL_FLOAT32_INT:
        *v = PAIR_AT(float, int, buf, k)->v;
        *i = PAIR_AT(float, int, buf, k)->i;
        break;
    case DCOLL_FLOAT64_INT:
        *v = PAIR_AT(double, int, buf, k)->v;
        *i = PAIR_AT(double, int, buf, k)->i;
        break;
    case DCOLL_INT32_INT:
        *v = PAIR_AT(int, int, buf, k)->v;
        *i = PAIR_AT(int, int, buf, k)->i;
        break;
    case DCOLL_2FLOAT32:
        *v = PAIR_AT(float, float, buf, k)->v;
        *i = PAIR_AT(float, float, buf, k)->i;
        break;
    default:
        *v = PAIR_AT(double, double, buf, k)->v;
        *i = PAIR_AT(double, double, buf, k)->i;
        break;
    }
}

static inline int nt_is_pair(dcoll_dtype_t dt)
{
    return dt >= DCOLL_FLOAT32_INT;
}

/* Element k of rank r's buffer b. Pairs: values 0..2, many equal across
 * ranks, with indices that differ, so that ties are decided by them. */
static inline void nt_fill(void *buf, dcoll_dtype_t dt, int r, int b, int n)
{
    for (int k = 0; k < n; k++) {
        int v = (r * 5 + b * 7 + k * 3) % 3;
        double re = v - 1, im = (r + b + k) % 3 - 1;
        if (nt_is_pair(dt))
            nt_pair_set(buf, dt, k, v - 1, (r * 3 + k * 5 + b) % 7);
        else if (dt == DCOLL_COMPLEX64)
            ((float _Complex *)buf)[k] = (float)re + (float)im * I;
        else if (dt == DCOLL_COMPLEX128)
            ((double _Complex *)buf)[k] = re + im * I;
        else
            nt_set_int(buf, dt, k, v);
    }
}

/* The first element of n where a and b differ (pairs: value or index;
 * others: bytes), or -1. */
static inline long nt_differs(const void *a, const void *b, int64_t n,
                             dcoll_dtype_t dt)
{
    size_t esz = nt_size(dt);
    for (int64_t k = 0; k < n; k++) {
        if (nt_is_pair(dt)) {
            double av, ai, bv, bi;
            nt_pair_get(a, dt, (int)k, &av, &ai);
            nt_pair_get(b, dt, (int)k, &bv, &bi);
            if (av != bv || ai != bi)
                return (long)k;
        } else if (nt_is_complex(dt)) {
            /* By value: a product's zero takes its sign from the order
             * the factors are taken in (1*0 - (-1)*(-0) is +0, the other
             * way -0), which differs between MPI's order and the shared
             * segment's (mpi_layer/shm.c); every other bit must match. */
            for (int p = 0; p < 2; p++) {
                double x = dt == DCOLL_COMPLEX64
                               ? ((const float *)a)[2 * k + p]
                               : ((const double *)a)[2 * k + p];
                double y = dt == DCOLL_COMPLEX64
                               ? ((const float *)b)[2 * k + p]
                               : ((const double *)b)[2 * k + p];
                if (x != y)
                    return (long)k;
            }
        } else if (memcmp((const char *)a + k * esz,
                          (const char *)b + k * esz, esz)) {
            return (long)k;
        }
    }
    return -1;
}

#endif
