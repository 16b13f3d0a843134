! vector.f90: the vector collectives from Fortran, with default-integer
! counts and displacements as MPI codes keep them. Rank r owns r + 1
! values; every rank gathers all of them (all_gatherv, packed), rank 0
! gathers them into a spaced-out buffer (gatherv with displs=), and
! scatters them back (scatterv). Displacements are optional keyword
! arguments after the type (and root), 0-based as in MPI.
!
!   mpirun -n 4 ./vector_f          (any number of ranks)
program vector
    use dcoll
    implicit none
    integer :: rank, size, r, i, n, st, ok, all_ok
    integer, allocatable :: counts(:), displs(:), spaced(:)
    real(8), allocatable :: mine(:), all(:), gathered(:), back(:)

    call check(dcoll_init())
    call check(dcoll_group_rank(DCOLL_WORLD, rank))
    call check(dcoll_group_size(DCOLL_WORLD, size))
    allocate(counts(size), displs(size), spaced(size))
    do r = 0, size - 1
        counts(r + 1) = r + 1
        displs(r + 1) = r * (r + 1) / 2
        spaced(r + 1) = displs(r + 1) + r      ! one empty slot between blocks
    end do
    n = sum(counts)
    allocate(mine(rank + 1), all(n), gathered(n + size), back(rank + 1))
    mine = [(100d0 * rank + i, i = 1, rank + 1)]

    call check(dcoll_all_gatherv(DCOLL_WORLD, mine, rank + 1, all, counts, &
                                 DCOLL_REAL8))
    gathered = -1
    call check(dcoll_gatherv(DCOLL_WORLD, mine, rank + 1, gathered, counts, &
                             DCOLL_REAL8, 0, displs=spaced))
    call check(dcoll_scatterv(DCOLL_WORLD, gathered, counts, back, rank + 1, &
                              DCOLL_REAL8, 0, displs=spaced))

    ok = 1
    do r = 0, size - 1
        do i = 1, r + 1
            ! Exact: small whole numbers, moved, never computed.
            if (abs(all(displs(r + 1) + i) - (100d0 * r + i)) > 0) ok = 0
            if (rank == 0) then
                if (abs(gathered(spaced(r + 1) + i) - (100d0 * r + i)) > 0) ok = 0
            end if
        end do
    end do
    if (any(abs(back - mine) > 0)) ok = 0
    call check(dcoll_all_reduce(DCOLL_WORLD, ok, all_ok, 1, DCOLL_INTEGER, &
                                DCOLL_MIN))
    if (rank == 0) print '(a, i0, a, a)', 'vector: ', size, ' ranks, ', &
        merge('ok   ', 'WRONG', all_ok == 1)
    call check(dcoll_finalize())
    if (all_ok /= 1) error stop 1
contains
    subroutine check(status)
        integer, intent(in) :: status
        if (status /= DCOLL_SUCCESS) then
            print *, 'dcoll: ', dcoll_last_error()
            st = dcoll_abort(1, 'vector: a call failed')
        end if
    end subroutine
end program
