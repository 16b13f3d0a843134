! Each bind(C) type of `use dcoll` has the size of the C struct it
! mirrors: a field added on one side only fails here.
program test_sizes
    use, intrinsic :: iso_c_binding
    use dcoll
    implicit none
    interface
        function c_size(name) bind(C, name='dcoll_test_c_sizeof')
            import :: c_char, c_int
            character(kind=c_char), dimension(*), intent(in) :: name
            integer(c_int) :: c_size
        end function
    end interface
    character(len=24), parameter :: names(11) = [character(len=24) :: &
        'dcoll_group_t *', 'dcoll_work_t *', 'dcoll_coll_opts_t', &
        'dcoll_init_params_t', 'dcoll_store_t *', 'dcoll_store_params_t', &
        'dcoll_spawn_params_t', 'dcoll_spawn_failure_t', &
        'dcoll_backend_ops_t', 'dcoll_backend_call_t', &
        'dcoll_group_params_t']
    integer :: i, f, c, bad
    bad = 0
    do i = 1, size(names)
        f = dcoll_fortran_sizeof(trim(names(i)))
        c = c_size(trim(names(i)) // c_null_char)
        if (f /= c .or. f <= 0) then
            print '(a, a, a, i0, a, i0)', 'size differs: ', trim(names(i)), &
                ': Fortran ', f, ', C ', c
            bad = bad + 1
        end if
    end do
    ! dcoll's bool and logical are this compiler's logical(c_bool) and
    ! default LOGICAL.
    block
        integer :: sz
        logical :: l
        logical(c_bool) :: b
        if (dcoll_dtype_size(DCOLL_LOGICAL, sz) /= DCOLL_SUCCESS .or. &
                sz /= storage_size(l) / 8) then
            print '(a, i0, a, i0)', 'size differs: DCOLL_LOGICAL ', sz, &
                ', LOGICAL ', storage_size(l) / 8
            bad = bad + 1
        end if
        if (dcoll_dtype_size(DCOLL_BOOL, sz) /= DCOLL_SUCCESS .or. &
                sz /= storage_size(b) / 8) then
            print '(a, i0, a, i0)', 'size differs: DCOLL_BOOL ', sz, &
                ', logical(c_bool) ', storage_size(b) / 8
            bad = bad + 1
        end if
    end block
    if (bad /= 0) error stop 1
    print '(a, i0, a)', 'fortran sizes: ', size(names), &
        ' types and bool and logical match C'
end program
