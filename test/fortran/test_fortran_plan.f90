! Plans from Fortran: a time-step loop whose halo (send and recv plans,
! finished by wait_all), residual (an all_reduce plan) and diagnostics
! (a gatherv plan, a broadcast plan, a barrier plan) are planned once and
! started each step, with ASYNCHRONOUS buffers; a plan refused on one rank
! fails on every rank; a plan can only be freed once its group is gone;
! walls instead of a ring: DCOLL_PROC_NULL past the ends; each rank's
! offset by exscan, and a scan planned; the same halo as one neighbourhood
! plan with walls, and its all_gather; a plan on dcoll_mem_alloc's memory.
program test_fortran_plan
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    use dcoll
    use fcheck
    implicit none
    integer, parameter :: n = 16, steps = 5
    real(8), asynchronous :: u(0:n + 1), edge_l(1), edge_r(1)
    real(8), asynchronous :: ghost_l(1), ghost_r(1), res, total, all(64)
    integer(8), asynchronous :: step_no, mine, offset, upto
    integer :: size, rank, left, right, step, i, k, src
    integer :: counts(64), everyone(64)
    type(dcoll_plan) :: halo(4), sum_p, gat_p, bc_p, bar_p, bad
    type(dcoll_work) :: w(4)
    type(dcoll_group) :: g
    type(dcoll_neighborhood) :: nb
    real(8), asynchronous :: faces(2), ghosts(2), heard(2)
    integer(8) :: ones(2)
    type(dcoll_layout) :: sendl(2), recvl(2), col
    real(8), asynchronous :: grid(4, 3)
    integer :: nin, nout
    real(8) :: want
    type(c_ptr) :: hp, hq, hz
    real(8), pointer, asynchronous :: hx(:), hy(:)
    type(dcoll_plan) :: heap_p

    call ok(dcoll_init(tuning=''), 'init')
    call ok(dcoll_group_size(DCOLL_WORLD, size), 'size')
    call ok(dcoll_group_rank(DCOLL_WORLD, rank), 'rank')
    me = rank
    left = mod(rank + size - 1, size)
    right = mod(rank + 1, size)
    counts = 1

    ! Planned once.
    call ok(dcoll_recv_plan(DCOLL_WORLD, ghost_l, 1, DCOLL_FLOAT64, left, &
                            1, plan=halo(1)), 'recv plan (left)')
    call ok(dcoll_recv_plan(DCOLL_WORLD, ghost_r, 1, DCOLL_FLOAT64, right, &
                            2, plan=halo(2)), 'recv plan (right)')
    call ok(dcoll_send_plan(DCOLL_WORLD, edge_r, 1, DCOLL_FLOAT64, right, &
                            1, plan=halo(3)), 'send plan (right)')
    call ok(dcoll_send_plan(DCOLL_WORLD, edge_l, 1, DCOLL_FLOAT64, left, &
                            2, plan=halo(4)), 'send plan (left)')
    call ok(dcoll_all_reduce_plan(DCOLL_WORLD, res, total, 1, &
                                  DCOLL_FLOAT64, DCOLL_SUM, plan=sum_p), &
            'all_reduce plan')
    call ok(dcoll_gatherv_plan(DCOLL_WORLD, res, 1, all, counts(1:size), &
                               DCOLL_FLOAT64, 0, plan=gat_p), 'gatherv plan')
    call ok(dcoll_broadcast_plan(DCOLL_WORLD, step_no, 1_8, DCOLL_INT64, 0, &
                                 plan=bc_p), 'broadcast plan')
    call ok(dcoll_barrier_plan(DCOLL_WORLD, plan=bar_p), 'barrier plan')

    do step = 1, steps
        u = rank * 100 + step
        edge_l(1) = u(1)
        edge_r(1) = u(n)
        do k = 1, 4
            call ok(dcoll_plan_start(halo(k), w(k)), 'halo start')
        end do
        call ok(dcoll_work_wait_all(w), 'halo wait_all')
        call expect(ghost_l(1) == left * 100 + step, 'ghost from the left')
        call expect(ghost_r(1) == right * 100 + step, 'ghost from the right')
        res = u(1) + ghost_l(1)
        call ok(dcoll_plan_start(sum_p), 'residual start')
        want = 0
        do i = 0, size - 1
            want = want + (i * 100 + step) + (mod(i + size - 1, size) * 100 &
                   + step)
        end do
        call expect(total == want, 'residual sum')
        all = -1
        call ok(dcoll_plan_start(gat_p), 'diagnostics start')
        if (rank == 0) then
            do i = 0, size - 1
                call expect(all(i + 1) == (i * 100 + step) + &
                            (mod(i + size - 1, size) * 100 + step), &
                            'gathered residual')
            end do
        end if
        step_no = merge(int(step, 8), -1_8, rank == 0)
        call ok(dcoll_plan_start(bc_p, w(1)), 'broadcast start')
        call ok(dcoll_work_wait(w(1)), 'broadcast wait')
        call expect(step_no == step, 'step number broadcast')
        call ok(dcoll_plan_start(bar_p), 'barrier start')
    end do

    ! Started twice, freed while running.
    call ok(dcoll_plan_start(sum_p, w(1)), 'start with a work')
    call refused(dcoll_plan_start(sum_p, w(2)), DCOLL_ERR_INVALID_STATE, &
                 'still running', 'second start')
    call refused(dcoll_plan_free(sum_p), DCOLL_ERR_INVALID_STATE, &
                 'still running', 'free while running')
    call ok(dcoll_work_wait(w(1)), 'wait')
    do k = 1, 4
        call ok(dcoll_plan_free(halo(k)), 'free halo plan')
    end do
    call ok(dcoll_plan_free(sum_p), 'free')
    call ok(dcoll_plan_free(gat_p), 'free')
    call ok(dcoll_plan_free(bc_p), 'free')
    call ok(dcoll_plan_free(bar_p), 'free')

    ! Walls: the ends have no neighbour (DCOLL_PROC_NULL); their ghosts
    ! stay as they were, and the receives' source says none.
    left = merge(DCOLL_PROC_NULL, rank - 1, rank == 0)
    right = merge(DCOLL_PROC_NULL, rank + 1, rank == size - 1)
    call ok(dcoll_recv_plan(DCOLL_WORLD, ghost_l, 1, DCOLL_FLOAT64, left, &
                            1, plan=halo(1)), 'recv plan (wall, left)')
    call ok(dcoll_recv_plan(DCOLL_WORLD, ghost_r, 1, DCOLL_FLOAT64, right, &
                            2, plan=halo(2)), 'recv plan (wall, right)')
    call ok(dcoll_send_plan(DCOLL_WORLD, edge_r, 1, DCOLL_FLOAT64, right, &
                            1, plan=halo(3)), 'send plan (wall, right)')
    call ok(dcoll_send_plan(DCOLL_WORLD, edge_l, 1, DCOLL_FLOAT64, left, &
                            2, plan=halo(4)), 'send plan (wall, left)')
    edge_l(1) = rank * 10 + 1
    edge_r(1) = rank * 10 + 2
    ghost_l(1) = -7
    ghost_r(1) = -7
    do k = 1, 4
        call ok(dcoll_plan_start(halo(k), w(k)), 'wall halo start')
    end do
    call ok(dcoll_work_wait_all(w), 'wall halo wait_all')
    call expect(ghost_l(1) == merge(-7, (rank - 1) * 10 + 2, rank == 0), &
                'ghost from the left, or the wall''s untouched')
    call expect(ghost_r(1) == merge(-7, (rank + 1) * 10 + 1, &
                                    rank == size - 1), &
                'ghost from the right, or the wall''s untouched')
    call ok(dcoll_work_source(w(1), src), 'source')
    call expect(src == left, 'the left receive''s source')
    do k = 1, 4
        call ok(dcoll_plan_free(halo(k)), 'free wall plan')
    end do
    call ok(dcoll_send(DCOLL_WORLD, edge_l, 1, DCOLL_FLOAT64, &
                       DCOLL_PROC_NULL, 3), 'blocking send to no one')

    ! Offsets into a global array: exscan of the counts (rank 0's stays
    ! as it was), and the inclusive scan as a plan.
    mine = rank + 1
    offset = -5
    call ok(dcoll_exscan(DCOLL_WORLD, mine, offset, 1, DCOLL_INT64, &
                         DCOLL_SUM), 'exscan')
    call expect(offset == merge(-5_8, int(rank, 8) * (rank + 1) / 2, &
                                rank == 0), 'exscan offset')
    call ok(dcoll_scan_plan(DCOLL_WORLD, mine, upto, 1_8, DCOLL_INT64, &
                            DCOLL_SUM, plan=bad), 'scan plan')
    do k = 1, 2
        upto = 0
        call ok(dcoll_plan_start(bad), 'scan start')
        call expect(upto == int(rank + 1, 8) * (rank + 2) / 2, 'scan')
    end do
    call ok(dcoll_plan_free(bad), 'free scan plan')

    ! The halo as one neighbourhood plan: the left and right ghosts from
    ! the neighbours, walls past the ends (their ghosts untouched).
    call ok(dcoll_neighborhood_create(nb, DCOLL_WORLD, &
            [merge(DCOLL_PROC_NULL, rank - 1, rank == 0), &
             merge(DCOLL_PROC_NULL, rank + 1, rank == size - 1)], &
            [merge(DCOLL_PROC_NULL, rank - 1, rank == 0), &
             merge(DCOLL_PROC_NULL, rank + 1, rank == size - 1)]), &
            'neighbourhood')
    call ok(dcoll_neighborhood_degrees(nb, nin, nout), 'degrees')
    call expect(nin == 2 .and. nout == 2, 'degrees 2 and 2')
    ones = 1
    call ok(dcoll_neighbor_all_to_allv_plan(nb, faces, ones, ghosts, ones, &
            DCOLL_FLOAT64, plan=bad), 'neighbour plan')
    do k = 1, 2
        faces = [rank * 10.0d0 + k, rank * 10.0d0 + k + 0.5d0]
        ghosts = -1
        call ok(dcoll_plan_start(bad), 'neighbour start')
        call expect(ghosts(1) == merge(-1.0d0, (rank - 1) * 10.0d0 + k + &
                    0.5d0, rank == 0), 'left ghost')
        call expect(ghosts(2) == merge(-1.0d0, (rank + 1) * 10.0d0 + k, &
                    rank == size - 1), 'right ghost')
    end do
    call ok(dcoll_plan_free(bad), 'free neighbour plan')
    heard = -1
    res = rank
    call ok(dcoll_neighbor_all_gather(nb, res, 1, heard, &
            DCOLL_FLOAT64), 'neighbour all_gather')
    call expect(heard(1) == merge(-1, rank - 1, rank == 0) .and. &
                heard(2) == merge(-1, rank + 1, rank == size - 1), &
                'neighbour all_gather blocks')
    ! The w form on u itself: u(1) and u(n) out, ghosts u(0) and u(n+1)
    ! in, offsets counted from u(0).
    sendl(1) = dcoll_layout(1, 1, 1, 1, 0, 0)
    sendl(2) = dcoll_layout(n, 1, 1, 1, 0, 0)
    recvl(1) = dcoll_layout(0, 1, 1, 1, 0, 0)
    recvl(2) = dcoll_layout(n + 1, 1, 1, 1, 0, 0)
    u = -1
    u(1) = rank + 0.25d0
    u(n) = rank + 0.75d0
    call ok(dcoll_neighbor_all_to_allw(nb, u, sendl, u, recvl, &
            DCOLL_FLOAT64), 'neighbour all_to_allw')
    call expect(u(0) == merge(-1.0d0, rank - 1 + 0.75d0, rank == 0) .and. &
                u(n + 1) == merge(-1.0d0, rank + 1 + 0.25d0, &
                                  rank == size - 1), 'all_to_allw ghosts')
    call ok(dcoll_neighborhood_free(nb), 'free neighbourhood')

    ! A row of a column-major array is strided: grid(2, :) to the next
    ! rank's grid(4, :) (offsets from grid(1, 1), in elements); past the
    ! walls (DCOLL_PROC_NULL) nothing moves.
    col = dcoll_layout(1, 3, 1, 4, 0, 0)
    grid = rank
    grid(2, :) = [rank * 10.0d0 + 1, rank * 10.0d0 + 2, rank * 10.0d0 + 3]
    call ok(dcoll_send_layout(DCOLL_WORLD, grid, col, DCOLL_FLOAT64, right, &
            11, work=w(1)), 'send_layout')
    col%offset = 3
    call ok(dcoll_recv_layout(DCOLL_WORLD, grid, col, DCOLL_FLOAT64, left, &
            11, work=w(2)), 'recv_layout')
    call ok(dcoll_work_wait_all(w(1:2)), 'layout waits')
    want = merge(rank, left, left == DCOLL_PROC_NULL)
    call expect(maxval(abs(grid(4, :) - merge([want, want, want], &
                [left * 10.0d0 + 1, left * 10.0d0 + 2, left * 10.0d0 + 3], &
                left == DCOLL_PROC_NULL))) == 0 .and. &
                maxval(abs(grid(3, :) - rank)) == 0, 'recv_layout row')

    ! Memory the group shares (dcoll_mem_alloc): an array of it, a plan
    ! started on it as its values change, a size of -1 refused on every
    ! rank.
    call ok(dcoll_mem_alloc(DCOLL_WORLD, 8_8 * 5000, hp), 'mem_alloc')
    call c_f_pointer(hp, hx, [5000])
    call ok(dcoll_mem_alloc(DCOLL_WORLD, 8_8 * 5000, hq), 'mem_alloc (out)')
    call c_f_pointer(hq, hy, [5000])
    call ok(dcoll_all_reduce_plan(DCOLL_WORLD, hx, hy, 5000, DCOLL_FLOAT64, &
                                  DCOLL_SUM, plan=heap_p), 'plan on mem')
    do step = 1, 3
        hx = [(rank + i + step, i = 1, 5000)]
        call ok(dcoll_plan_start(heap_p), 'start on mem')
        want = 0
        do k = 0, size - 1
            want = want + k
        end do
        call expect(maxval(abs(hy - [(want + size * (i + step), &
                    i = 1, 5000)])) == 0, 'all_reduce plan on mem')
    end do
    call ok(dcoll_plan_free(heap_p), 'plan free (mem)')
    call refused(dcoll_mem_alloc(DCOLL_WORLD, merge(-1_8, 64_8, &
                 rank == 0), hz), DCOLL_ERR_INVALID_ARGUMENT, &
                 merge('negative', 'refused ', rank == 0), 'mem_alloc -1')
    call ok(dcoll_mem_free(DCOLL_WORLD, hp), 'mem_free')
    call ok(dcoll_mem_free(DCOLL_WORLD, hq), 'mem_free (out)')

    ! One rank's bad count fails the plan everywhere.
    k = merge(-1, 1, rank == size - 1)
    call expect(dcoll_all_reduce_plan(DCOLL_WORLD, res, total, k, &
                DCOLL_FLOAT64, DCOLL_SUM, plan=bad) == &
                DCOLL_ERR_INVALID_ARGUMENT, 'one rank refused: every rank fails')

    ! A plan outlives its group only to be freed.
    everyone = [(i, i = 0, 63)]
    call ok(dcoll_new_group(g, everyone(1:size)), 'new_group')
    call ok(dcoll_all_reduce_plan(g, res, total, 1, DCOLL_FLOAT64, &
                                  DCOLL_SUM, plan=sum_p), 'plan on a group')
    call ok(dcoll_group_destroy(g), 'destroy')
    call refused(dcoll_plan_start(sum_p), DCOLL_ERR_INVALID_STATE, &
                 'destroyed', 'start after destroy')
    call ok(dcoll_plan_free(sum_p), 'free after destroy')

    call ok(dcoll_finalize(), 'finalize')
    if (failures /= 0) then
        write (0, '(a,i0,a,i0)') '[rank ', me, '] fortran-plan failures: ', &
            failures
        error stop 1
    end if
    if (rank == 0) write (*, '(a)') 'fortran-plan: ok on rank 0'
end program
