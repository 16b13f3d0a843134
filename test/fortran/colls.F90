! The collective tests, once per Fortran type and array rank.
#define CONV(x) real(x, 4)
#define TYPE real(4)
#define DT DCOLL_REAL4

#define MODNAME fcoll_r4_rank1
#define DIMS :
#define SHAPE2(n) n
#include "body.inc"
#undef MODNAME
#undef DIMS
#undef SHAPE2

#define MODNAME fcoll_r4_rank2
#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
#include "body.inc"
#undef MODNAME
#undef DIMS
#undef SHAPE2

#undef CONV
#undef TYPE
#undef DT
#define CONV(x) real(x, 8)
#define TYPE real(8)
#define DT DCOLL_REAL8

#define MODNAME fcoll_r8_rank1
#define DIMS :
#define SHAPE2(n) n
#include "body.inc"
#undef MODNAME
#undef DIMS
#undef SHAPE2

#define MODNAME fcoll_r8_rank2
#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
#include "body.inc"
#undef MODNAME
#undef DIMS
#undef SHAPE2

#undef CONV
#undef TYPE
#undef DT
#define CONV(x) nint(x)
#define TYPE integer
#define DT DCOLL_INTEGER

#define MODNAME fcoll_int_rank1
#define DIMS :
#define SHAPE2(n) n
#include "body.inc"
#undef MODNAME
#undef DIMS
#undef SHAPE2

#define MODNAME fcoll_int_rank2
#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
#include "body.inc"
