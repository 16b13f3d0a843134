! Failure counting shared by the Fortran tests.
module fcheck
    use dcoll
    implicit none
    integer :: failures = 0, me = 0

contains

    subroutine expect(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        if (.not. cond) then
            failures = failures + 1
            if (failures < 20) write (0, '(a,i0,2a)') '[rank ', me, '] ', what
        end if
    end subroutine

    ! A call that must succeed.
    subroutine ok(st, what)
        integer, intent(in) :: st
        character(len=*), intent(in) :: what
        if (st /= DCOLL_SUCCESS) then
            call expect(.false., what // ': ' // dcoll_status_string(st) // &
                        ': ' // dcoll_last_error())
        end if
    end subroutine

    ! A call that must fail with status want and a message containing text.
    subroutine refused(st, want, text, what)
        integer, intent(in) :: st, want
        character(len=*), intent(in) :: text, what
        call expect(st == want, what // ': got ' // dcoll_status_string(st))
        call expect(index(dcoll_last_error(), text) > 0, what // &
                    ': message "' // dcoll_last_error() // '" lacks "' // &
                    text // '"')
    end subroutine
end module
