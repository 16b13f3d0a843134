! dcoll_abort and dcoll_wtime from Fortran (run by test/mpi/launch.sh):
! the last rank ends the job with code 9 while the others wait.
program test_abort
    use dcoll
    implicit none
    integer :: rank, size, st
    real(8) :: t0
    t0 = dcoll_wtime()
    st = dcoll_init()
    st = dcoll_group_rank(DCOLL_WORLD, rank)
    st = dcoll_group_size(DCOLL_WORLD, size)
    if (dcoll_wtime() < t0) error stop 'dcoll_wtime went back'
    if (rank == size - 1) st = dcoll_abort(9, 'fortran asked for it')
    st = dcoll_barrier(DCOLL_WORLD)
    error stop 'left the barrier'
end program
