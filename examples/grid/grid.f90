! grid.f90: examples/grid/grid.c in Fortran, through `use dcoll`.
!
! A periodic NX x NY plate on a PR x PC grid of ranks. Each step: halo
! exchange with the four neighbours (isend/irecv, one wait_all), the
! explicit heat stencil, and the global residual with all_reduce (MAX).
! Each row and each column of the process grid is a group (two calls of
! dcoll_split_group) that sums its band's heat. The steps are timed with
! dcoll_wtime, and any failure ends the whole job through dcoll_abort,
! as MPI codes do with MPI_Wtime and MPI_Abort.
! The start is an eigenmode of the stencil, so the program checks its
! result against the exact answer.
!
!   mpirun -n 4 ./grid_f            (any number of ranks)
program grid
    use dcoll
    implicit none
    integer, parameter :: nx_all = 96, ny_all = 96, steps = 200
    real(8), parameter :: a = 0.2d0, pi = acos(-1.0d0)
    real(8), allocatable, target :: u(:, :), v(:, :), sendl(:), sendr(:), &
                                    recvl(:), recvr(:)
    type(dcoll_group) :: row, column
    type(dcoll_work) :: wk(8)
    integer :: rank, size, pr, pc, myr, myc, x0, y0, nx, ny, d, i, j, k
    integer :: up, down, left, right, ok, all_ok
    real(8) :: change, residual, f, amp, err, band, cband, exact, t0, t1

    call check(dcoll_init())
    call check(dcoll_group_rank(DCOLL_WORLD, rank))
    call check(dcoll_group_size(DCOLL_WORLD, size))

    ! The most square process grid; this rank is at (myr, myc), 0-based.
    pr = 1
    do d = 1, size
        if (d * d > size) exit
        if (mod(size, d) == 0) pr = d
    end do
    pc = size / pr
    myr = rank / pc
    myc = mod(rank, pc)
    x0 = nx_all * myc / pc
    nx = nx_all * (myc + 1) / pc - x0
    y0 = ny_all * myr / pr
    ny = ny_all * (myr + 1) / pr - y0

    ! The block with a halo: u(0:nx+1, 0:ny+1). A row u(1:nx, j) is
    ! contiguous in Fortran and goes as it is; the left and right edges
    ! u(1, :) and u(nx, :) are strided, so they travel packed.
    allocate(u(0:nx + 1, 0:ny + 1), v(0:nx + 1, 0:ny + 1))
    allocate(sendl(ny), sendr(ny), recvl(ny), recvr(ny))
    u = 0
    do j = 1, ny
        do i = 1, nx
            u(i, j) = 1 + sin(2 * pi * (x0 + i - 1) / nx_all) * &
                          sin(2 * pi * (y0 + j - 1) / ny_all)
        end do
    end do
    v = u
    up = mod(myr + pr - 1, pr) * pc + myc
    down = mod(myr + 1, pr) * pc + myc
    left = myr * pc + mod(myc + pc - 1, pc)
    right = myr * pc + mod(myc + 1, pc)

    ! This rank's row and column of the process grid, one split each
    ! (color: which row or column; key: the place in it).
    call check(dcoll_split_group(row, DCOLL_WORLD, myr, myc))
    call check(dcoll_split_group(column, DCOLL_WORLD, myc, myr))

    t0 = dcoll_wtime()
    do k = 1, steps
        ! 1. Halo exchange; the packed edges are unpacked after the waits.
        sendl = u(1, 1:ny)
        sendr = u(nx, 1:ny)
        call check(dcoll_irecv(DCOLL_WORLD, u(1:nx, 0), nx, DCOLL_REAL8, &
                               up, 0, work=wk(1)))
        call check(dcoll_irecv(DCOLL_WORLD, u(1:nx, ny + 1), nx, DCOLL_REAL8, &
                               down, 1, work=wk(2)))
        call check(dcoll_irecv(DCOLL_WORLD, recvl, ny, DCOLL_REAL8, left, 2, &
                               work=wk(3)))
        call check(dcoll_irecv(DCOLL_WORLD, recvr, ny, DCOLL_REAL8, right, 3, &
                               work=wk(4)))
        call check(dcoll_isend(DCOLL_WORLD, u(1:nx, ny), nx, DCOLL_REAL8, &
                               down, 0, work=wk(5)))
        call check(dcoll_isend(DCOLL_WORLD, u(1:nx, 1), nx, DCOLL_REAL8, &
                               up, 1, work=wk(6)))
        call check(dcoll_isend(DCOLL_WORLD, sendr, ny, DCOLL_REAL8, right, 2, &
                               work=wk(7)))
        call check(dcoll_isend(DCOLL_WORLD, sendl, ny, DCOLL_REAL8, left, 3, &
                               work=wk(8)))
        call check(dcoll_work_wait_all(wk))
        do i = 1, 8
            call check(dcoll_work_free(wk(i)))
        end do
        u(0, 1:ny) = recvl
        u(nx + 1, 1:ny) = recvr

        ! 2. The stencil, and 3. the global residual.
        change = 0
        do j = 1, ny
            do i = 1, nx
                v(i, j) = u(i, j) + a * (u(i - 1, j) + u(i + 1, j) + &
                          u(i, j - 1) + u(i, j + 1) - 4 * u(i, j))
                change = max(change, abs(v(i, j) - u(i, j)))
            end do
        end do
        u(1:nx, 1:ny) = v(1:nx, 1:ny)
        call check(dcoll_all_reduce(DCOLL_WORLD, change, residual, 1, &
                                    DCOLL_REAL8, DCOLL_MAX))
    end do
    t1 = dcoll_wtime()

    ! Checks against the exact answer, and the bands' heat over the row
    ! and over the column.
    f = 1 - 4 * a * (sin(pi / nx_all)**2 + sin(pi / ny_all)**2)
    amp = f**steps
    err = 0
    band = 0
    do j = 1, ny
        do i = 1, nx
            exact = 1 + amp * sin(2 * pi * (x0 + i - 1) / nx_all) * &
                              sin(2 * pi * (y0 + j - 1) / ny_all)
            err = max(err, abs(u(i, j) - exact))
            band = band + u(i, j)
        end do
    end do
    cband = band
    call check(dcoll_all_reduce(row, band, band, 1, DCOLL_REAL8, DCOLL_SUM))
    call check(dcoll_all_reduce(column, cband, cband, 1, DCOLL_REAL8, &
                                DCOLL_SUM))
    ok = merge(1, 0, err < 1d-9 .and. &
               abs(band - real(nx_all * ny, 8)) < 1d-8 * nx_all * ny .and. &
               abs(cband - real(ny_all * nx, 8)) < 1d-8 * ny_all * nx)
    call check(dcoll_all_reduce(DCOLL_WORLD, ok, all_ok, 1, DCOLL_INTEGER, &
                                DCOLL_MIN))
    if (rank == 0) write (*, '(a,i0,a,i0,a,es9.2,a,es9.2,a)') 'grid_f: ', &
        pr, ' x ', pc, ' ranks, residual ', residual, ', max error ', err, &
        merge(': ok    ', ': FAILED', all_ok == 1)
    if (rank == 0) write (*, '(a,i0,a,f0.3,a)') 'grid_f: ', steps, &
        ' steps in ', t1 - t0, ' s'
    call check(dcoll_group_destroy(row))
    call check(dcoll_group_destroy(column))
    call check(dcoll_finalize())
    if (all_ok /= 1) error stop 1

contains

    ! End the whole job, every rank, with dcoll's message on any failure
    ! (a plain stop here would leave the other ranks waiting).
    subroutine check(st)
        integer, intent(in) :: st
        integer :: ignored
        if (st /= DCOLL_SUCCESS) ignored = dcoll_abort(1, 'grid_f: ' // &
                                                       dcoll_last_error())
    end subroutine
end program
