/* env.c: a job no MPI launcher started. dcollrun (or torchrun) sets
 * RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; dcoll_init with env://
 * meets the others through a TCP store at MASTER_ADDR:MASTER_PORT and
 * joins them into one MPI world. The program also keeps a key of its own
 * in the world's store, as torch.distributed programs do.
 *
 *   dcollrun -n 4 ./env
 *   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./env &
 *   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./env
 */
#include <stdio.h>
#include <string.h>
#include <dcoll/dcoll.h>

int main(void)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_URL;
    p.url = "env://";
    if (dcoll_init(&p) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    int rank, size;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);

    /* Rank 0 publishes a value; every rank waits for it. */
    dcoll_store_t *store;
    char got[32] = "";
    size_t len = 0;
    dcoll_world_store(&store);
    if (rank == 0)
        dcoll_store_set(store, "greeting", "hello", 5);
    dcoll_store_get(store, "greeting", got, sizeof(got) - 1, &len);

    int one = 1, count = 0;
    dcoll_all_reduce(NULL, &one, &count, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                     NULL);
    int ok = count == size && len == 5 && !memcmp(got, "hello", 5);
    if (rank == 0)
        printf("env: %d processes met through env://, store says '%s': "
               "%s\n", count, got, ok ? "ok" : "WRONG");
    dcoll_finalize();
    return ok ? 0 : 1;
}
