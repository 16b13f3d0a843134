! Every collective from Fortran through `use dcoll` with mpi_f08: real(4),
! real(8) and integer arrays of rank 1 and 2, on the world and on a
! sub-group passed out of order, blocking and async; then bad input.
program test_fortran
    use, intrinsic :: iso_c_binding
    use mpi_f08
    use dcoll
    use fcheck
    use fcoll_r4_rank1, only: r4_1 => run
    use fcoll_r4_rank2, only: r4_2 => run
    use fcoll_r8_rank1, only: r8_1 => run
    use fcoll_r8_rank2, only: r8_2 => run
    use fcoll_int_rank1, only: int_1 => run
    use fcoll_int_rank2, only: int_2 => run
    implicit none
    type(dcoll_group) :: sub, bad, spare
    type(MPI_Comm) :: comm
    integer :: world, i, total, csize
    integer, allocatable :: members(:), all_ranks(:)
    real(4) :: a(4), m(2, 3)
    logical :: flag(3)
    complex :: z(2)
    complex(8) :: zz(1)
    real(8) :: loc(2, 2)
    integer :: iloc(2)
    logical(c_bool) :: cflag(2)
    real(8), target :: t1(3), t2(5), t3(1)
    type(c_ptr) :: bufs(3)
    integer(c_int64_t) :: counts(3)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, me)
    call MPI_Comm_size(MPI_COMM_WORLD, world)
    call ok(dcoll_init_comm(MPI_COMM_WORLD), 'dcoll_init_comm(type(MPI_Comm))')

    all_ranks = [(i, i = 0, world - 1)]
    call r4_1(DCOLL_WORLD, all_ranks, 'world real(4) rank 1')
    call r4_2(DCOLL_WORLD, all_ranks, 'world real(4) rank 2')
    call r8_1(DCOLL_WORLD, all_ranks, 'world real(8) rank 1')
    call r8_2(DCOLL_WORLD, all_ranks, 'world real(8) rank 2')
    call int_1(DCOLL_WORLD, all_ranks, 'world integer rank 1')
    call int_2(DCOLL_WORLD, all_ranks, 'world integer rank 2')

    ! Every other rank from the top, listed in descending order: {3,1} of
    ! 4, {2,0} of 3. dcoll sorts them.
    members = [(i, i = world - 1, 0, -2)]
    call ok(dcoll_new_group(sub, members, timeout=600d0), 'new_group')
    members = members(size(members):1:-1)
    call r4_1(sub, members, 'sub-group real(4) rank 1')
    call r8_2(sub, members, 'sub-group real(8) rank 2')
    call int_2(sub, members, 'sub-group integer rank 2')
    if (any(members == me)) then
        call ok(dcoll_group_comm(sub, comm), 'group_comm(type(MPI_Comm))')
        call MPI_Comm_size(comm, csize)
        call expect(csize == size(members), 'sub-group communicator size')
    end if
    call ok(dcoll_group_destroy(sub), 'destroy')

    ! Coalesced: three real(8) tensors of different lengths, in place.
    t1 = me + 1
    t2 = 2 * (me + 1)
    t3 = -1
    bufs = [c_loc(t1), c_loc(t2), c_loc(t3)]
    counts = [3_c_int64_t, 5_c_int64_t, 1_c_int64_t]
    call ok(dcoll_all_reduce_coalesced(DCOLL_WORLD, bufs, counts, 3, &
            DCOLL_REAL8, DCOLL_SUM), 'all_reduce_coalesced')
    total = world * (world + 1) / 2
    call expect(all(t1 == total) .and. all(t2 == 2 * total) .and. &
                all(t3 == -world), 'all_reduce_coalesced result')

    ! Multi-buffer: t1 and t2 (their first 3 elements) act as two ranks
    ! each, so the sum over 2 * world buffers.
    t1 = me + 1
    t2 = 10 * (me + 1)
    call ok(dcoll_all_reduce_multi(DCOLL_WORLD, [c_loc(t1), c_loc(t2)], 3, &
            DCOLL_REAL8, DCOLL_SUM), 'all_reduce_multi')
    call expect(all(t1(1:3) == 11 * total) .and. all(t2(1:3) == 11 * total), &
                'all_reduce_multi result')
    t1 = me
    call ok(dcoll_broadcast_multi(DCOLL_WORLD, [c_loc(t1), c_loc(t2)], 3, &
            DCOLL_REAL8, world - 1, 0), 'broadcast_multi')
    call expect(all(t1(1:3) == world - 1) .and. all(t2(1:3) == world - 1), &
                'broadcast_multi result')

    ! Bad input: a clear status and a message that names the value. A
    ! collective refused on a member leaves its group unusable there (the
    ! others may be waiting in it), so on spare groups; a group of one
    ! rank is kept.
    a = 1
    m = 1
    call ok(dcoll_new_group(spare, all_ranks), 'spare group')
    call refused(dcoll_all_reduce(spare, a, a, -1, DCOLL_REAL4, &
                 DCOLL_SUM), DCOLL_ERR_INVALID_ARGUMENT, 'count -1', &
                 'negative count')
    if (world == 1) then
        call ok(dcoll_barrier(spare), 'the kept group after a refusal')
    else
        call refused(dcoll_barrier(spare), DCOLL_ERR_GROUP_FAILED, &
                     'this rank refused', 'the group after a refusal')
    end if
    call ok(dcoll_group_destroy(spare), 'destroy spare')
    call ok(dcoll_new_group(spare, all_ranks), 'spare group')
    call refused(dcoll_all_reduce(spare, a, a, 4, 42, DCOLL_SUM), &
                 DCOLL_ERR_INVALID_ARGUMENT, 'dtype 42', 'bad dtype')
    call ok(dcoll_group_destroy(spare), 'destroy spare')
    call ok(dcoll_new_group(spare, all_ranks), 'spare group')
    call refused(dcoll_all_reduce(spare, a, a, 4, DCOLL_REAL4, &
                 DCOLL_BXOR), DCOLL_ERR_INVALID_ARGUMENT, 'bitwise', &
                 'bitwise op on reals')
    call ok(dcoll_group_destroy(spare), 'destroy spare')
    call ok(dcoll_new_group(spare, all_ranks), 'spare group')
    call refused(dcoll_broadcast(spare, a, 4, DCOLL_REAL4, world), &
                 DCOLL_ERR_INVALID_ARGUMENT, 'root', 'root out of range')
    call ok(dcoll_group_destroy(spare), 'destroy spare')
    if (world > 1) then
        call refused(dcoll_new_group(bad, [0, 0]), &
                     DCOLL_ERR_INVALID_ARGUMENT, 'listed twice', &
                     'duplicate rank')
    end if
    ! A strided section would be read as if contiguous: refused, on C's
    ! path for a refused call (numbered, the group's rules applied).
    call ok(dcoll_new_group(spare, all_ranks), 'spare group')
    call refused(dcoll_all_reduce(spare, m(1, :), m(2, :), 3, &
                 DCOLL_REAL4, DCOLL_SUM), DCOLL_ERR_INVALID_ARGUMENT, &
                 'sendbuf is not contiguous', 'strided section')
    call expect(world == 1 .or. &
                index(dcoll_last_error(), 'collective #') > 0, &
                'the module''s refusal is numbered as C''s are: ' // &
                dcoll_last_error())
    call ok(dcoll_group_destroy(spare), 'destroy spare')
    call refused(dcoll_new_group(bad, [world]), DCOLL_ERR_INVALID_ARGUMENT, &
                 'ranks[0]', 'rank out of range')
    call refused(dcoll_new_group(bad, [0], timeout=-1d0), &
                 DCOLL_ERR_INVALID_ARGUMENT, 'timeout -1 s', 'bad timeout')
    call refused(dcoll_init_comm(MPI_COMM_WORLD), &
                 DCOLL_ERR_ALREADY_INITIALIZED, 'init', 'init twice')
    call refused(dcoll_group_destroy(bad), DCOLL_SUCCESS, '', &
                 'destroy of a null handle')
    ! The ranks still agree after all that.
    a = 1
    call ok(dcoll_all_reduce(DCOLL_WORLD, a, a, 4, DCOLL_REAL4, DCOLL_SUM), &
            'all_reduce after errors')
    call expect(all(a == world), 'all_reduce after errors')
    ! A complex checksum, and a product of (0, 1) on every rank.
    z = [cmplx(1.0, real(me)), cmplx(0.0, 1.0)]
    call ok(dcoll_all_reduce(DCOLL_WORLD, z, z, 2, DCOLL_COMPLEX, &
            DCOLL_SUM), 'all_reduce SUM on COMPLEX')
    call expect(z(1) == cmplx(real(world), real(world * (world - 1) / 2)) &
                .and. z(2) == cmplx(0.0, real(world)), 'SUM on COMPLEX')
    zz = (0d0, 1d0)
    call ok(dcoll_all_reduce(DCOLL_WORLD, zz, zz, 1, DCOLL_DOUBLE_COMPLEX, &
            DCOLL_PRODUCT), 'all_reduce PRODUCT on DOUBLE COMPLEX')
    call expect(zz(1) == (0d0, 1d0)**world, 'PRODUCT on DOUBLE COMPLEX')
    ! Where the largest residual is: MAXLOC on (value, index) pairs, the
    ! lowest index among equals; and MINLOC on 2INTEGER.
    loc(:, 1) = [real(mod(me, 2), 8), real(me, 8)]
    loc(:, 2) = [1d0, real(10 - me, 8)]
    call ok(dcoll_all_reduce(DCOLL_WORLD, loc, loc, 2, &
            DCOLL_2DOUBLE_PRECISION, DCOLL_MAXLOC), 'MAXLOC on 2DOUBLE')
    call expect(loc(1, 1) == merge(1d0, 0d0, world > 1) .and. &
                loc(2, 1) == merge(1d0, 0d0, world > 1) .and. &
                loc(1, 2) == 1d0 .and. loc(2, 2) == real(11 - world, 8), &
                'MAXLOC on 2DOUBLE PRECISION')
    iloc = [me, me]
    call ok(dcoll_all_reduce(DCOLL_WORLD, iloc, iloc, 1, DCOLL_2INTEGER, &
            DCOLL_MINLOC), 'MINLOC on 2INTEGER')
    call expect(iloc(1) == 0 .and. iloc(2) == 0, 'MINLOC on 2INTEGER')
    ! Convergence flags: default LOGICAL and logical(c_bool), LOR and LAND.
    flag = [me == 0, .true., .false.]
    call ok(dcoll_all_reduce(DCOLL_WORLD, flag, flag, 3, DCOLL_LOGICAL, &
            DCOLL_LOR), 'all_reduce LOR on LOGICAL')
    call expect(flag(1) .and. flag(2) .and. .not. flag(3), 'LOR on LOGICAL')
    cflag(1) = logical(me == 0, c_bool)
    cflag(2) = .true.
    call ok(dcoll_all_reduce(DCOLL_WORLD, cflag, cflag, 2, DCOLL_BOOL, &
            DCOLL_LAND), 'all_reduce LAND on logical(c_bool)')
    call expect(logical(cflag(1)) .eqv. (world == 1) .and. &
                logical(cflag(2)), 'LAND on logical(c_bool)')

    ! A dump on demand (each group's recorder: DCOLL_FLIGHT_DIR=stderr
    ! here, so the test leaves no file).
    call ok(dcoll_dump(), 'dump')

    call ok(dcoll_finalize(), 'finalize')
    call refused(dcoll_barrier(DCOLL_WORLD), DCOLL_ERR_FINALIZED, '', &
                 'barrier after finalize')
    call refused(dcoll_dump(), DCOLL_ERR_FINALIZED, '', 'dump after finalize')
    call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, &
                       MPI_COMM_WORLD)
    if (me == 0) write (*, '(a,i0,a,i0,a)') 'fortran: ', failures, &
        ' failure(s) on ', world, ' rank(s)'
    call MPI_Finalize()
    if (failures /= 0) error stop 1
end program
