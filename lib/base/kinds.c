/* The facts of each kind of call (kinds.h), as the one table every layer
 * reads. */
#include "base.h"

#include "kinds.h"
#include "tables.h"

const struct dcoll_kind_info dcoll_kinds[DCOLL_CALL_KIND_COUNT_] =
    DCOLL_KINDS_INIT;

const char *dcoll_kind_name(int kind)
{
    if ((unsigned)kind >= DCOLL_CALL_KIND_COUNT_)
        return "unknown";
    return dcoll_kinds[kind].name;
}

/* What a plan's starts call on the MPI path (enum dcoll_plan_calls in
 * tables.h): set by diag from DCOLL_PLAN_CALLS, read by the MPI layer. */
int dcoll_plan_calls;

_Atomic uint64_t dcoll_gpu_latest;
int (*dcoll_death_of)(const struct dcoll_group *g, char *text, size_t cap);
