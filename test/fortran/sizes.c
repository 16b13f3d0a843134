/* C's side of the Fortran struct check: sizeof of each public struct the
 * module mirrors with a bind(C) type, by name. */
#include <stddef.h>
#include <string.h>
#include "dcoll/dcoll.h"

int dcoll_test_c_sizeof(const char *name);

int dcoll_test_c_sizeof(const char *name)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"dcoll_group_t *", sizeof(dcoll_group_t *)},
        {"dcoll_work_t *", sizeof(dcoll_work_t *)},
        {"dcoll_coll_opts_t", sizeof(dcoll_coll_opts_t)},
        {"dcoll_init_params_t", sizeof(dcoll_init_params_t)},
        {"dcoll_store_t *", sizeof(dcoll_store_t *)},
        {"dcoll_store_params_t", sizeof(dcoll_store_params_t)},
        {"dcoll_spawn_params_t", sizeof(dcoll_spawn_params_t)},
        {"dcoll_spawn_failure_t", sizeof(dcoll_spawn_failure_t)},
        {"dcoll_backend_ops_t", sizeof(dcoll_backend_ops_t)},
        {"dcoll_backend_call_t", sizeof(dcoll_backend_call_t)},
        {"dcoll_group_params_t", sizeof(dcoll_group_params_t)},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (!strcmp(sizes[i].name, name))
            return (int)sizes[i].size;
    return -1;
}
