! The collective tests, once per Fortran type and array rank. The module
! and use lines are written out (not made by the preprocessor, nor left in
! body.inc) so that the build sees which file provides and needs which
! module.
#define CONV(x) real(x, 4)
#define TYPE real(4)
#define DT DCOLL_REAL4

#define DIMS :
#define SHAPE2(n) n
module fcoll_r4_rank1
    use dcoll
    use fcheck
#include "body.inc"
end module
#undef DIMS
#undef SHAPE2

#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
module fcoll_r4_rank2
    use dcoll
    use fcheck
#include "body.inc"
end module
#undef DIMS
#undef SHAPE2

#undef CONV
#undef TYPE
#undef DT
#define CONV(x) real(x, 8)
#define TYPE real(8)
#define DT DCOLL_REAL8

#define DIMS :
#define SHAPE2(n) n
module fcoll_r8_rank1
    use dcoll
    use fcheck
#include "body.inc"
end module
#undef DIMS
#undef SHAPE2

#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
module fcoll_r8_rank2
    use dcoll
    use fcheck
#include "body.inc"
end module
#undef DIMS
#undef SHAPE2

#undef CONV
#undef TYPE
#undef DT
#define CONV(x) nint(x)
#define TYPE integer
#define DT DCOLL_INTEGER

#define DIMS :
#define SHAPE2(n) n
module fcoll_int_rank1
    use dcoll
    use fcheck
#include "body.inc"
end module
#undef DIMS
#undef SHAPE2

#define DIMS :,:
#define SHAPE2(n) 2, (n) / 2
module fcoll_int_rank2
    use dcoll
    use fcheck
#include "body.inc"
end module
