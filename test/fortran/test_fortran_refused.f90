! The module's refusals take C's path (issue 67 items 2, 5 and 10): a
! call the module refuses on one rank is numbered and the group's rules
! for a refused call apply on every rank, so no rank's next call pairs
! with the others' refused one; counts and layouts past the arrays given
! are refused naming both sizes, nothing written; neighbourhood arrays
! shorter than the degree are refused, strided count sections read as
! their elements, and a rank with no neighbours may pass empty arrays.
! Run twice: DCOLL_DEBUG=detail (the others told at once, the group goes
! on) and default mode (each case's group has a 2-s timeout in return
! mode: the others time out naming rank 0; every rank's group is spent
! after; the world, which makes the groups, waits for them).
program test_fortran_refused
    use dcoll
    use fcheck
    implicit none
    integer :: size, rank, i, st, nin, nout
    logical :: debug
    character(len=16) :: mode
    type(dcoll_group) :: g
    type(dcoll_plan) :: plan
    type(dcoll_neighborhood) :: nb
    real(4), target, asynchronous :: a(8), x(4), y(4), big(8)
    integer(8), asynchronous :: cnt(8), one(1), gath(8)
    integer(8) :: three(3), none(0)
    real(8), asynchronous :: u(8), v(8), face(2), ghost(2)
    type(dcoll_layout) :: sl(2), rl(2)

    call ok(dcoll_init(tuning=''), 'init')
    call ok(dcoll_group_size(DCOLL_WORLD, size), 'size')
    call ok(dcoll_group_rank(DCOLL_WORLD, rank), 'rank')
    me = rank
    call get_environment_variable('DCOLL_DEBUG', mode)
    debug = mode /= ''

    ! 2: a strided section on rank 0 only. Its refusal is rank 0's; the
    ! others' call of that number is told (debug) or times out naming it.
    call spare(g)
    a = [(real(i), i = 1, 8)]
    x = rank + 1
    y = -7
    if (rank == 0) then
        st = dcoll_all_reduce(g, a(1:8:2), y, 4, DCOLL_REAL4, DCOLL_SUM)
    else
        st = dcoll_all_reduce(g, x, y, 4, DCOLL_REAL4, DCOLL_SUM)
    end if
    call refusal(st, 'all_reduce', 'not contiguous')
    ! (A call that timed out leaves its receive buffer undefined.)
    call expect(all(y == -7) .or. timed_out(), &
                'strided all_reduce wrote nothing')
    call after(g)

    ! ... and a counts array shorter than the group on rank 0 only.
    call spare(g)
    one = 1
    cnt = 1
    gath = -7
    if (rank == 0) then
        st = dcoll_all_gatherv(g, one, 1_8, gath, cnt(1:size - 1), &
                               DCOLL_INTEGER8)
    else
        st = dcoll_all_gatherv(g, one, 1_8, gath, cnt(1:size), DCOLL_INTEGER8)
    end if
    call refusal(st, 'all_gatherv', 'fewer than')
    call expect(all(gath == -7) .or. timed_out(), &
                'short counts wrote nothing')
    call after(g)

    ! ... and a plan: refused on every rank, named by rank 0's reason
    ! there; the plans made next start right.
    call spare(g)
    if (rank == 0) then
        st = dcoll_all_reduce_plan(g, a(1:8:2), y, 4, DCOLL_REAL4, &
                                   DCOLL_SUM, plan=plan)
        call expect(st == DCOLL_ERR_INVALID_ARGUMENT .and. &
                    index(dcoll_last_error(), 'not contiguous') > 0, &
                    'strided plan refused: ' // dcoll_last_error())
    else
        st = dcoll_all_reduce_plan(g, x, y, 4, DCOLL_REAL4, DCOLL_SUM, &
                                   plan=plan)
        call expect(st /= DCOLL_SUCCESS .and. &
                    index(dcoll_last_error(), 'rank 0') > 0, &
                    'the others'' plan names rank 0: ' // dcoll_last_error())
    end if
    x = rank + 1
    call ok(dcoll_all_reduce_plan(g, x, y, 4, DCOLL_REAL4, DCOLL_SUM, &
            plan=plan), 'plan after a refused one')
    call ok(dcoll_plan_start(plan), 'start')
    call expect(all(y == size * (size + 1) / 2), 'the plan sums right')
    call ok(dcoll_plan_free(plan), 'free plan')
    call ok(dcoll_group_destroy(g), 'destroy')

    ! 5: a count past the array: refused on every rank, naming both
    ! sizes; nothing past the section written.
    call spare(g)
    big = -7
    x = 1
    st = dcoll_all_reduce(g, x, big(1:4), 6, DCOLL_REAL4, DCOLL_SUM)
    call expect(st == DCOLL_ERR_INVALID_ARGUMENT .and. &
                index(dcoll_last_error(), 'holds 16 bytes (4 float32') > 0 &
                .and. index(dcoll_last_error(), '6 elements (24 bytes)') > 0, &
                'count past the array: ' // dcoll_last_error())
    call expect(all(big == -7), 'count past the array wrote nothing')
    call drop(g)

    ! A ring with two edges a rank (its left and right; at 1 or 2 ranks
    ! the same rank twice).
    if (size > 1) then
        call spare(g)
        call ok(dcoll_neighborhood_create(nb, g, &
                [mod(rank + size - 1, size), mod(rank + 1, size)], &
                [mod(rank + size - 1, size), mod(rank + 1, size)]), 'ring')
        call ok(dcoll_neighborhood_degrees(nb, nin, nout), 'degrees')
        ! A ghost layout at offset 8 of an 8-element array.
        sl(1) = dcoll_layout(0, 1, 1, 1, 0, 0)
        sl(2) = dcoll_layout(7, 1, 1, 1, 0, 0)
        rl(1) = dcoll_layout(1, 1, 1, 1, 0, 0)
        rl(2) = dcoll_layout(8, 1, 1, 1, 0, 0)
        u = rank
        v = -7
        st = dcoll_neighbor_all_to_allw(nb, u, sl, v, rl, DCOLL_FLOAT64)
        call expect(st == DCOLL_ERR_INVALID_ARGUMENT .and. &
                    index(dcoll_last_error(), 'recvbuf holds 64 bytes') > 0, &
                    'layout past the array: ' // dcoll_last_error())
        call expect(all(v == -7), 'layout past the array wrote nothing')
        call ok(dcoll_neighborhood_free(nb), 'free ring')
        call drop(g)

        ! 10: counts shorter than the degree, named.
        call spare(g)
        call ok(dcoll_neighborhood_create(nb, g, &
                [mod(rank + size - 1, size), mod(rank + 1, size)], &
                [mod(rank + size - 1, size), mod(rank + 1, size)]), 'ring')
        face = rank
        ghost = -7
        st = dcoll_neighbor_all_to_allv(nb, face, cnt(1:1), ghost, &
                                        cnt(1:2), DCOLL_FLOAT64)
        call expect(st == DCOLL_ERR_INVALID_ARGUMENT .and. &
                    index(dcoll_last_error(), 'sendcounts has 1 entries, ' // &
                          'fewer than the neighbourhood''s 2 destinations') &
                    > 0, 'counts shorter than the degree: ' // &
                    dcoll_last_error())
        call ok(dcoll_neighborhood_free(nb), 'free ring')
        call drop(g)

        ! A strided counts section is read as its elements: [1, 1].
        call spare(g)
        call ok(dcoll_neighborhood_create(nb, g, &
                [mod(rank + size - 1, size), mod(rank + 1, size)], &
                [mod(rank + size - 1, size), mod(rank + 1, size)]), 'ring')
        three = [1_8, 99_8, 1_8]
        face = [rank + 0.25d0, rank + 0.75d0]
        ghost = -7
        call ok(dcoll_neighbor_all_to_allv(nb, face, three(1:3:2), ghost, &
                three(1:3:2), DCOLL_FLOAT64), 'strided counts')
        call expect(ghost(1) == mod(rank + size - 1, size) + 0.75d0 .and. &
                    ghost(2) == mod(rank + 1, size) + 0.25d0, &
                    'strided counts: the ghosts')
        call ok(dcoll_neighborhood_free(nb), 'free ring')
        call ok(dcoll_group_destroy(g), 'destroy')
    end if

    ! 3: in debug mode, each edge's two ends compared: rank 0 sends 1
    ! element where its neighbours expect 2 (all_to_allv), gathers 1
    ! where the others send 2 (all_gather), picks 1 for 2 (all_to_allw).
    if (size > 2 .and. debug) then
        call spare(g)
        call ok(dcoll_neighborhood_create(nb, g, &
                [mod(rank + size - 1, size), mod(rank + 1, size)], &
                [mod(rank + size - 1, size), mod(rank + 1, size)]), 'ring')
        three = 2
        if (rank == 0) three = 1
        u = -7
        st = dcoll_neighbor_all_to_allv(nb, u, three(1:2), v, [2_8, 2_8], &
                                        DCOLL_FLOAT64)
        call edges(st, 'all_to_allv')
        st = dcoll_neighbor_all_gather(nb, u, three(1), v, DCOLL_FLOAT64)
        call edges(st, 'all_gather')
        sl(1) = dcoll_layout(0, three(1), 1, 1, 0, 0)
        sl(2) = dcoll_layout(2, three(1), 1, 1, 0, 0)
        rl(1) = dcoll_layout(0, 2, 1, 1, 0, 0)
        rl(2) = dcoll_layout(2, 2, 1, 1, 0, 0)
        st = dcoll_neighbor_all_to_allw(nb, u, sl, v, rl, DCOLL_FLOAT64)
        call edges(st, 'all_to_allw')
        ! 4: a ghost that is the face sent, in one array: refused.
        sl(1) = dcoll_layout(1, 1, 1, 1, 0, 0)
        sl(2) = dcoll_layout(6, 1, 1, 1, 0, 0)
        rl(1) = dcoll_layout(0, 1, 1, 1, 0, 0)
        rl(2) = dcoll_layout(6, 1, 1, 1, 0, 0)
        u = rank
        st = dcoll_neighbor_all_to_allw(nb, u, sl, u, rl, DCOLL_FLOAT64)
        call expect(st /= DCOLL_SUCCESS .and. index(dcoll_last_error(), &
                    'recvlayouts[1] writes what sendlayouts[1] sends ' // &
                    '(from element 6 of recvbuf)') > 0, &
                    'a ghost that is a face: ' // dcoll_last_error())
        call expect(all(u == rank), 'a ghost that is a face: nothing moved')
        call ok(dcoll_neighborhood_free(nb), 'free ring')
        call ok(dcoll_group_destroy(g), 'destroy')
    end if

    ! A rank with no neighbours passes empty arrays (rank 0 here; the
    ! others in a chain).
    if (size > 2) then
        call spare(g)
        if (rank == 0) then
            call ok(dcoll_neighborhood_create(nb, g, [integer ::], &
                    [integer ::]), 'no neighbours')
            call ok(dcoll_neighbor_all_to_allv(nb, face, none, ghost, &
                    none, DCOLL_FLOAT64), 'empty counts at degree 0')
        else
            call ok(dcoll_neighborhood_create(nb, g, [chain(rank - 1)], &
                    [chain(rank + 1)]), 'chain')
            face = rank
            ghost = -7
            call ok(dcoll_neighbor_all_to_allv(nb, face, cnt(1:1), ghost, &
                    cnt(1:1), DCOLL_FLOAT64), 'chain all_to_allv')
            call expect(ghost(1) == merge(-7, rank - 1, rank == 1), &
                        'chain: the ghost')
        end if
        call ok(dcoll_neighborhood_free(nb), 'free')
        call ok(dcoll_group_destroy(g), 'destroy')
    end if

    call ok(dcoll_finalize(), 'finalize')
    if (failures > 0) then
        write (0, '(a,i0,a,i0)') 'fortran-refused: ', failures, &
            ' failure(s) on rank ', rank
        error stop 1
    end if
    if (rank == 0) print '(a)', 'fortran-refused: ok'

contains

    subroutine spare(h)
        type(dcoll_group), intent(out) :: h
        call ok(dcoll_new_group(h, [(i, i = 0, size - 1)], timeout=2d0, &
                on_timeout=DCOLL_ON_TIMEOUT_RETURN), 'spare group')
    end subroutine

    ! A spent group (default mode, every rank refused) is destroyed.
    subroutine drop(h)
        type(dcoll_group), intent(inout) :: h
        call ok(dcoll_group_destroy(h), 'destroy')
    end subroutine

    ! An edge whose ends disagree: refused on every rank, naming both.
    subroutine edges(st, call)
        integer, intent(in) :: st
        character(len=*), intent(in) :: call
        call expect(st == DCOLL_ERR_MISMATCH .and. &
                    index(dcoll_last_error(), 'rank 0 (world 0) sends 1 ' // &
                          'element(s) to rank 1 (world 1), which expects 2') &
                    > 0, call // ': edges that disagree: ' // &
                    dcoll_last_error())
    end subroutine

    ! This rank's call of rank 0's refused one timed out (default mode).
    logical function timed_out()
        timed_out = .not. debug .and. rank /= 0
    end function

    ! A chain's neighbour among ranks 1..size-1, or a wall.
    integer function chain(r)
        integer, intent(in) :: r
        chain = merge(r, DCOLL_PROC_NULL, r >= 1 .and. r < size)
    end function

    ! The status of a call rank 0 alone refused, on each rank.
    subroutine refusal(st, call, why)
        integer, intent(in) :: st
        character(len=*), intent(in) :: call, why
        if (rank == 0) then
            call expect(st == DCOLL_ERR_INVALID_ARGUMENT .and. &
                        index(dcoll_last_error(), why) > 0, call // &
                        ': the refusing rank: ' // dcoll_last_error())
        else if (debug) then
            call expect(st == DCOLL_ERR_MISMATCH .and. &
                        index(dcoll_last_error(), 'rank 0 (world 0) ' // &
                              'refused ' // call) > 0 .and. &
                        index(dcoll_last_error(), why) > 0, call // &
                        ': the others (debug): ' // dcoll_last_error())
        else
            call expect(st == DCOLL_ERR_TIMEOUT .and. &
                        index(dcoll_last_error(), 'rank 0 (world 0) ' // &
                              'refused ' // call) > 0, call // &
                        ': the others: ' // dcoll_last_error())
        end if
    end subroutine

    ! After a refusal on rank 0 alone: debug mode, the group goes on and
    ! its next call sums right on every rank; default mode, no rank's
    ! next call pairs with the refused one: each fails, nothing written.
    subroutine after(h)
        type(dcoll_group), intent(inout) :: h
        x = rank + 1
        y = -7
        st = dcoll_all_reduce(h, x, y, 4, DCOLL_REAL4, DCOLL_SUM)
        if (debug .or. size == 1) then
            call expect(st == DCOLL_SUCCESS .and. &
                        all(y == size * (size + 1) / 2), &
                        'the next call sums right')
        else
            call expect(st /= DCOLL_SUCCESS .and. all(y == -7), &
                        'the next call fails, nothing written: ' // &
                        dcoll_last_error())
        end if
        call ok(dcoll_group_destroy(h), 'destroy')
    end subroutine
end program
