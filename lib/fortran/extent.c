/* The C side of the Fortran module's bounds (DCOLL_COLL_OPT_BOUNDS):
 * how many bytes an array of any type and rank holds, read from the
 * descriptor Fortran 2018 passes for an assumed-rank dummy. The
 * descriptor's layout is the Fortran compiler's own, so this file is
 * compiled with the C compiler that goes with the one compiling
 * dcoll.F90 (docs/fortran.md). */
#include <ISO_Fortran_binding.h>
#include <stdint.h>

int64_t dcollf_array_bytes(const CFI_cdesc_t *d);

__attribute__((visibility("hidden"))) int64_t
dcollf_array_bytes(const CFI_cdesc_t *d)
{
    int64_t n = (int64_t)d->elem_len;
    for (int i = 0; i < d->rank; i++) {
        CFI_index_t e = d->dim[i].extent;
        /* An assumed-size array's last extent is -1: its size is not
         * known, so nothing bounds it. */
        if (e < 0)
            return INT64_MAX;
        if (e > 0 && n > INT64_MAX / e)
            return INT64_MAX;
        n *= (int64_t)e;
    }
    return n;
}
