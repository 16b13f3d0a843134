! The Fortran consumer of an installed dcoll (CMake's dcoll::dcoll_fortran).
program hello_f
    use dcoll
    implicit none
    integer :: rank, size, st
    real(8) :: v(1)
    st = dcoll_init()
    if (st /= DCOLL_SUCCESS) error stop 'dcoll_init'
    st = dcoll_group_rank(DCOLL_WORLD, rank)
    st = dcoll_group_size(DCOLL_WORLD, size)
    v = rank + 1
    st = dcoll_all_reduce(DCOLL_WORLD, v, v, 1, DCOLL_REAL8, DCOLL_SUM)
    if (st /= DCOLL_SUCCESS) error stop 'dcoll_all_reduce'
    if (rank == 0) print '(a,i0,a,f0.1)', 'hello_f: ', size, ' ranks, sum ', v(1)
    if (abs(v(1) - size * (size + 1) / 2.0d0) > 0) error stop 'wrong sum'
    st = dcoll_finalize()
end program
