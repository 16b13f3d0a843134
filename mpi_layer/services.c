/* The communicator services table: how the layers above reach MPI for
 * anything that is not a collective on a program's buffers. */
#include "mpi_internal.h"

const struct dcoll_comm_ops dcoll_mpi_services = {
    .launched = dcoll_mpi_launched,
    .start = dcoll_mpi_start,
    .order_world = dcoll_mpi_order_world,
    .local = dcoll_mpi_local,
    .stop = dcoll_mpi_stop,
    .at_mpi_end = dcoll_mpi_at_end,
    .split = dcoll_mpi_split,
    .comm_free = dcoll_mpi_comm_free,
    .comm_fint = dcoll_mpi_comm_fint,
    .agree = dcoll_mpi_agree,
    .bcast_bytes = dcoll_mpi_bcast_bytes,
    .allgather_bytes = dcoll_mpi_allgather_bytes,
    .exchange = dcoll_mpi_exchange,
    .join_server = dcoll_mpi_join_server,
    .join_use = dcoll_mpi_join_use,
    .join_begin = dcoll_mpi_join_begin,
    .join_open = dcoll_mpi_join_open,
    .join_connect = dcoll_mpi_join_connect,
    .join_accept = dcoll_mpi_join_accept,
    .join_end = dcoll_mpi_join_end,
    .join_free = dcoll_mpi_join_free,
    .join_stop = dcoll_mpi_join_stop,
    .threaded = dcoll_mpi_threaded,
    .serve = dcoll_mpi_serve,
    .ack = dcoll_mpi_ack,
    .roll_call = dcoll_mpi_roll_call,
    .tell = dcoll_mpi_tell,
    .abort_job = dcoll_mpi_abort_job,
};
