! Stores, rendezvous and spawn from Fortran, with no launcher: every store
! operation on a served TCP store with a token, a prefix store, a file://
! rendezvous, and three spawned processes that meet by env:// and reduce.
module fstore_children
    use, intrinsic :: iso_c_binding
    use dcoll
    implicit none
contains
    ! One spawned process: meet by env://, sum the ranks, check.
    function child(rank, arg) bind(C) result(code)
        integer(c_int), value :: rank
        type(c_ptr), value :: arg
        integer(c_int) :: code
        integer :: x(4), n, vn
        type(dcoll_store) :: ws
        character(len=16) :: key, v
        code = 1
        if (c_associated(arg)) return   ! none is passed
        if (dcoll_init(url='env://', timeout=60d0) /= DCOLL_SUCCESS) return
        if (dcoll_group_size(DCOLL_WORLD, n) /= DCOLL_SUCCESS) return
        ! The world's store: each sets its key and reads the next rank's.
        code = 2
        if (dcoll_world_store(ws) /= DCOLL_SUCCESS) return
        write (key, '(a,i0)') 'f', rank
        if (dcoll_store_set(ws, trim(key), 'hi') /= DCOLL_SUCCESS) return
        write (key, '(a,i0)') 'f', mod(rank + 1, n)
        if (dcoll_store_get(ws, trim(key), v, vn) /= DCOLL_SUCCESS) return
        if (v(1:vn) /= 'hi') return
        if (dcoll_store_destroy(ws) /= DCOLL_ERR_INVALID_ARGUMENT) return
        code = 1
        x = rank + 1
        if (dcoll_all_reduce(DCOLL_WORLD, x, x, 4, DCOLL_INTEGER, &
                DCOLL_SUM) /= DCOLL_SUCCESS) return
        if (any(x /= n * (n + 1) / 2)) return
        if (dcoll_finalize() /= DCOLL_SUCCESS) return
        code = 0
    end function

    function failing(rank, arg) bind(C) result(code)
        integer(c_int), value :: rank
        type(c_ptr), value :: arg
        integer(c_int) :: code
        code = 0
        if (c_associated(arg)) code = 1   ! none is passed
        if (rank == 1) code = 4
    end function
end module

program test_fortran_store
    use, intrinsic :: iso_c_binding
    use dcoll
    use fstore_children
    implicit none
    type(dcoll_store) :: s, c, p
    type(dcoll_spawn_failure) :: f
    character(len=32) :: v
    integer :: port, n, rank, size, failures
    integer(8) :: r, count
    logical :: flag
    character(len=64) :: path
    type(c_funptr) :: fn
    failures = 0

    call ok(dcoll_store_tcp_create(s, '127.0.0.1', 0, serve=.true., &
            timeout=10d0, token='f0rtran'), 'serve')
    call ok(dcoll_store_port(s, port), 'port')
    call ok(dcoll_store_set(s, 'greeting', 'hello'), 'set')
    call ok(dcoll_store_get(s, 'greeting', v, n), 'get')
    call expect(v(1:n) == 'hello' .and. n == 5, 'get value')
    call ok(dcoll_store_add(s, 'n', 3_8, r), 'add')
    call ok(dcoll_store_add(s, 'n', 4_8, r), 'add')
    call expect(r == 7, 'add sum')
    call ok(dcoll_store_compare_set(s, 'c', '', 'one', v, n), 'cas new')
    call expect(v(1:n) == 'one', 'cas new value')
    call ok(dcoll_store_compare_set(s, 'c', 'two', 'three', v, n), 'cas miss')
    call expect(v(1:n) == 'one', 'cas miss value')
    call ok(dcoll_store_wait(s, [character(len=8) :: 'greeting', 'n'], &
            1d0), 'wait')
    call expect(dcoll_store_wait(s, ['absent'], 0.1d0) == DCOLL_ERR_TIMEOUT, &
            'wait times out')
    call ok(dcoll_store_check(s, [character(len=8) :: 'greeting', &
            'absent'], flag), 'check')
    call expect(.not. flag, 'check: one is absent')
    call ok(dcoll_store_num_keys(s, count), 'num_keys')
    call expect(count == 3, 'num_keys 3')
    call ok(dcoll_store_delete_key(s, 'c', flag), 'delete')
    call expect(flag, 'delete found it')
    call ok(dcoll_store_prefix_create(p, 'job', s), 'prefix')
    call ok(dcoll_store_set(p, 'x', 'y'), 'prefix set')
    call ok(dcoll_store_get(s, 'job/x', v, n), 'prefix key in base')
    call ok(dcoll_store_destroy(p), 'prefix destroy')
    ! Another client: the right token works, a wrong one is refused.
    call ok(dcoll_store_tcp_create(c, '127.0.0.1', port, timeout=5d0, &
            token='f0rtran'), 'client')
    call ok(dcoll_store_get(c, 'greeting', v), 'client get')
    call ok(dcoll_store_destroy(c), 'client destroy')
    call expect(dcoll_store_tcp_create(c, '127.0.0.1', port, timeout=5d0, &
            token='guess') == DCOLL_ERR_REFUSED, 'wrong token refused')
    call ok(dcoll_store_destroy(s), 'destroy')

    ! The server's limits reach it: a store of 200 bytes refuses 300.
    call ok(dcoll_store_tcp_create(s, '127.0.0.1', 0, serve=.true., &
            max_clients=4, max_unauthed=2, unauthed_frame=256, &
            idle_timeout=5d0, max_memory=200_8), 'serve with limits')
    call ok(dcoll_store_set(s, 'small', 'fits'), 'set under the limit')
    call expect(dcoll_store_set(s, 'big', repeat('x', 300)) == &
            DCOLL_ERR_NO_MEMORY, 'set past max_memory')
    call expect(index(dcoll_last_error(), 'limit of 200') > 0, &
            'max_memory message')
    call expect(dcoll_store_tcp_create(c, '127.0.0.1', 0, serve=.true., &
            max_clients=0) == DCOLL_ERR_INVALID_ARGUMENT, 'max_clients 0')
    call ok(dcoll_store_destroy(s), 'limits destroy')

    ! file:// rendezvous of one process.
    write (path, '(a,i0)') 'file:///tmp/dcoll-fstore-', getpid()
    call ok(dcoll_rendezvous(trim(path) // '?rank=0&world_size=1', s, rank, &
            size, timeout=5d0), 'rendezvous')
    call expect(rank == 0 .and. size == 1, 'rendezvous rank and size')
    call ok(dcoll_store_destroy(s), 'rendezvous store destroy')
    call expect(dcoll_rendezvous('tcp://127.0.0.1?rank=0&world_size=1', s, &
            rank, size) == DCOLL_ERR_INVALID_ARGUMENT, 'no port')
    call expect(index(dcoll_last_error(), 'port number missing') > 0, &
            'no port message')

    ! Spawned processes.
    fn = c_funloc(child)
    call ok(dcoll_spawn(fn, 3, failure=f), 'spawn')
    fn = c_funloc(failing)
    call expect(dcoll_spawn(fn, 2, failure=f) == &
            DCOLL_ERR_CHILD_FAILED, 'spawn failure')
    call expect(f%rank == 1 .and. f%exit_code == 4, 'spawn failure report')

    if (failures == 0) then
        print '(a)', 'fortran store, rendezvous and spawn: ok'
    else
        print '(i0,a)', failures, ' failure(s)'
        error stop 1
    end if
contains
    subroutine ok(st, what)
        integer, intent(in) :: st
        character(len=*), intent(in) :: what
        if (st /= DCOLL_SUCCESS) then
            print '(a,a,a)', what, ': ', dcoll_last_error()
            failures = failures + 1
        end if
    end subroutine

    subroutine expect(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            print '(a,a)', 'wrong: ', what
            failures = failures + 1
        end if
    end subroutine
end program
