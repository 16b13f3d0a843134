! `use mpi` (INTEGER handles): dcoll on a communicator split off the world,
! its group communicator back as an INTEGER, and MPI left running after.
program test_fortran_mpi
    use mpi
    use dcoll
    use fcheck
    implicit none
    integer :: ierr, world, half, comm, gcomm, n, rank, lrank, lsize, gpu, st
    logical :: flag
    integer :: x(3, 2)
    character(len=:), allocatable :: text
    type(dcoll_store) :: ws
    type(dcoll_group) :: alive

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, world, ierr)
    ! Two halves; dcoll's world is this rank's half.
    call MPI_Comm_split(MPI_COMM_WORLD, merge(0, 1, me < (world + 1) / 2), &
                        me, half, ierr)
    call ok(dcoll_init_comm(half), 'dcoll_init_comm(integer)')
    call ok(dcoll_initialized(flag), 'initialized')
    call expect(flag, 'initialized after init')
    call expect(dcoll_world_store(ws) == DCOLL_ERR_UNSUPPORTED, &
                'no world store for a world made from a communicator')
    call ok(dcoll_group_size(DCOLL_WORLD, n), 'size')
    call ok(dcoll_group_rank(DCOLL_WORLD, rank), 'rank')
    call ok(dcoll_group_comm(DCOLL_WORLD, gcomm), 'group_comm(integer)')
    call ok(dcoll_local_rank(lrank, lsize), 'local_rank')
    call expect(lrank == rank .and. lsize == n, 'local rank on one node')
    call ok(dcoll_device(gpu), 'device')
    call expect(gpu >= -1, 'dcoll_device')
    call ok(dcoll_backend_status('MPI', flag, text), 'backend_status')
    call expect(flag .and. index(text, 'MPI') > 0, 'mpi backend: ' // text)
    call MPI_Comm_size(gcomm, comm, ierr)
    call expect(comm == n, 'group communicator size')
    x = rank + 1
    call ok(dcoll_all_reduce(DCOLL_WORLD, x, x, 6, DCOLL_INTEGER, DCOLL_SUM), &
            'all_reduce')
    call expect(all(x == n * (n + 1) / 2), 'all_reduce on the half')
    ! No launcher says who died under mpirun: a shrink is refused.
    st = dcoll_group_shrink(DCOLL_WORLD, alive)
    text = dcoll_last_error()
    call expect(st == DCOLL_ERR_UNSUPPORTED .and. &
                index(text, '--on-failure continue') > 0, &
                'dcoll_group_shrink refused without a launcher''s word')
    call expect(DCOLL_ERR_RANK_DIED == 16, 'DCOLL_ERR_RANK_DIED')
    call ok(dcoll_finalize(), 'finalize')
    call MPI_Initialized(flag, ierr)
    call expect(flag, 'MPI still running after dcoll_finalize')
    call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, &
                       MPI_COMM_WORLD, ierr)
    if (me == 0) write (*, '(a,i0,a)') 'fortran-mpi: ', failures, &
        ' failure(s)'
    call MPI_Comm_free(half, ierr)
    call MPI_Finalize(ierr)
    if (failures /= 0) error stop 1
end program
