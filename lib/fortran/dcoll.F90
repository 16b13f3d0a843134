! dcoll for Fortran: `use dcoll`. Every public C function of dcoll has a
! bind(C) interface: the collectives' are generated from the C header by
! gen-fortran.py (dcoll_bind_c.inc, with their generic names and module
! procedures), the rest are written here, and the build stops where a C
! function has neither. The public names wrap them so that Fortran code
! passes arrays of any type and rank, default integers, and handles as
! derived types. Buffers are assumed-rank (`type(*), dimension(..)`) and
! must be contiguous: an array goes through as its first element's
! address. They are ASYNCHRONOUS, as mpi_f08's nonblocking buffers: give
! your own isend/irecv and async buffers the attribute too, and leave
! them alone until dcoll_work_wait (or wait_all) returns.
!
! Arguments come in the C order: group first, then buffers, count, type,
! op, root or peer, tag, opts, work. Calls read best with keywords, e.g.
!   st = dcoll_isend(DCOLL_WORLD, buf=a, count=n, dtype=DCOLL_REAL8, &
!                    dst=right, tag=1, work=w(1))
! Unlike MPI there is no trailing ierr: every function returns the status
! (DCOLL_SUCCESS = 0), and dcoll_last_error() says what was wrong. The
! work handle is the last argument, after the optional opts. Counts may be
! of kind 4 or 8.
module dcoll
    use, intrinsic :: iso_c_binding
#ifdef DCOLL_HAVE_MPI_F08
    use mpi_f08, only: MPI_Comm
#endif
    implicit none
    private

    ! Every constant of the C headers, generated from them at build time.
#include "dcoll_constants.inc"

    ! Statuses (dcoll_status_t).

    ! Element types (dcoll_dtype_t), and Fortran names for them.
    integer, parameter, public :: DCOLL_INTEGER1 = DCOLL_INT8
    integer, parameter, public :: DCOLL_INTEGER4 = DCOLL_INT32
    integer, parameter, public :: DCOLL_INTEGER8 = DCOLL_INT64
    integer, parameter, public :: DCOLL_REAL4 = DCOLL_FLOAT32
    integer, parameter, public :: DCOLL_REAL8 = DCOLL_FLOAT64
    ! Default INTEGER and REAL follow the compiler's flags (-fdefault-*).
    integer, parameter, public :: DCOLL_INTEGER = &
        merge(DCOLL_INT64, DCOLL_INT32, storage_size(0) == 64)
    integer, parameter, public :: DCOLL_REAL = &
        merge(DCOLL_FLOAT64, DCOLL_FLOAT32, storage_size(0.0) == 64)
    integer, parameter, public :: DCOLL_DOUBLE_PRECISION = DCOLL_FLOAT64
    ! COMPLEX follows the default REAL; complex(c_float_complex) and
    ! complex(c_double_complex) are DCOLL_COMPLEX64 and DCOLL_COMPLEX128.
    integer, parameter, public :: DCOLL_COMPLEX = &
        merge(DCOLL_COMPLEX128, DCOLL_COMPLEX64, storage_size(0.0) == 64)
    integer, parameter, public :: DCOLL_DOUBLE_COMPLEX = DCOLL_COMPLEX128
    ! MINLOC and MAXLOC pairs, MPI's Fortran forms: (value, index) as two
    ! of the value's type (-1, refused, where no pair type matches the
    ! compiler's default INTEGER).
    integer, parameter, public :: DCOLL_2REAL = &
        merge(DCOLL_2FLOAT64, DCOLL_2FLOAT32, storage_size(0.0) == 64)
    integer, parameter, public :: DCOLL_2DOUBLE_PRECISION = DCOLL_2FLOAT64
    integer, parameter, public :: DCOLL_2INTEGER = &
        merge(DCOLL_INT32_INT, -1, storage_size(0) == 32)

    ! Reduction operations (dcoll_op_t).

    ! MPI thread levels dcoll asks for when it starts MPI itself.

    ! Handles: one C pointer each, so that a handle passed by reference is
    ! exactly C's dcoll_group_t ** or dcoll_work_t **.
    type, bind(C), public :: dcoll_group
        type(c_ptr) :: ptr = c_null_ptr   ! null: the world
    end type

    type, bind(C), public :: dcoll_work
        type(c_ptr) :: ptr = c_null_ptr
    end type

    ! A plan (persistent call): dcoll_<collective>_plan makes it,
    ! dcoll_plan_start runs it, dcoll_plan_free frees it.
    type, bind(C), public :: dcoll_plan
        type(c_ptr) :: ptr = c_null_ptr
    end type

    ! A neighbourhood of a group: dcoll_neighborhood_create makes it from
    ! this rank's sources and destinations, dcoll_neighborhood_free frees
    ! it; dcoll_neighbor_all_gather and dcoll_neighbor_all_to_allv run on it.
    type, bind(C), public :: dcoll_neighborhood
        type(c_ptr) :: ptr = c_null_ptr
    end type

    ! A strided layout of a buffer, in elements (dcoll_layout_t): count
    ! blocks of blocklen elements, stride apart, the first offset
    ! elements from the buffer's start (0: its first element); that
    ! pattern count2 times (0 or 1: once), stride2 apart.
    type, bind(C), public :: dcoll_layout
        integer(c_int64_t) :: offset = 0, count = 0, blocklen = 0, stride = 0
        integer(c_int64_t) :: count2 = 0, stride2 = 0
    end type

    ! The world group, for any argument that takes a group.
    type(dcoll_group), parameter, public :: DCOLL_WORLD = &
        dcoll_group(c_null_ptr)

    ! dcoll_coll_opts_t: a CUDA stream for device buffers, and where the
    ! buffers live (DCOLL_MEMORY_HOST skips asking CUDA).
    type, bind(C), public :: dcoll_coll_opts
        integer(c_int64_t) :: mask = 0
        type(c_ptr) :: stream = c_null_ptr
        integer(c_int) :: memory = 0
        integer(c_int64_t) :: sendbytes = 0, recvbytes = 0
        type(c_ptr) :: refusal = c_null_ptr
    end type

    ! The C parameter structs, filled by the wrappers from optional
    ! arguments.
    type, bind(C) :: init_params
        integer(c_int64_t) :: mask = 0
        type(c_ptr) :: url = c_null_ptr
        integer(c_int) :: comm = 0
        integer(c_int) :: thread_level = 0
        type(c_ptr) :: backend = c_null_ptr
        real(c_double) :: timeout = 0
        real(c_double) :: coll_timeout = 0
        integer(c_int) :: on_timeout = 0
        type(c_ptr) :: tuning = c_null_ptr
    end type

    ! Stores (dcoll/store.h): a handle, and the C parameter struct.
    type, bind(C), public :: dcoll_store
        type(c_ptr) :: p = c_null_ptr
    end type
    type, bind(C) :: store_params
        integer(c_int64_t) :: mask = 0
        real(c_double) :: timeout = 0
        type(c_ptr) :: token = c_null_ptr
        integer(c_int) :: serve = 0
        integer(c_int) :: max_clients = 0
        integer(c_int) :: max_unauthed = 0
        integer(c_int) :: unauthed_frame = 0
        real(c_double) :: idle_timeout = 0
        integer(c_int64_t) :: max_memory = 0
        real(c_double) :: idle_close = 0
    end type

    ! dcoll_spawn (dcoll/spawn.h). The function it runs is a bind(C)
    ! integer(c_int) function of (integer(c_int), value :: rank;
    ! type(c_ptr), value :: arg), passed with c_funloc.
    type, bind(C) :: spawn_params
        integer(c_int64_t) :: mask = 0
        type(c_ptr) :: master_addr = c_null_ptr
        integer(c_int) :: master_port = 0
        real(c_double) :: timeout = 0
        integer(c_int) :: nnodes = 1, node_rank = 0
        integer(c_int) :: on_failure = 0
    end type
    type, bind(C), public :: dcoll_spawn_failure
        integer(c_int) :: rank = -1, exit_code = 0, signal = 0
    end type

    ! A program's backend (dcoll/backend.h): bind(C) procedures passed
    ! with c_funloc, called with a dcoll_backend_call.
    type, bind(C), public :: dcoll_backend_ops
        integer(c_int32_t) :: version = DCOLL_BACKEND_OPS_VERSION
        type(c_funptr) :: group_create = c_null_funptr
        type(c_funptr) :: run = c_null_funptr
        type(c_funptr) :: group_destroy = c_null_funptr
    end type
    type, bind(C), public :: dcoll_backend_call
        integer(c_int) :: kind
        type(c_ptr) :: sendbuf, recvbuf
        integer(c_int64_t) :: count
        integer(c_int) :: dtype, op, root, tag
        type(c_ptr) :: stream
    end type

    type, bind(C) :: group_params
        integer(c_int64_t) :: mask = 0
        type(c_ptr) :: backend = c_null_ptr
        real(c_double) :: timeout = 0
        integer(c_int) :: on_timeout = 0
    end type

    ! A refusal made here, before C is reached (a buffer that is not
    ! contiguous): dcoll_last_error() returns it until the next call
    ! through this module. Kept per process, not per thread.
    logical, save :: f_err_on = .false.
    character(len=:), allocatable, save :: f_err

    public :: dcoll_status_string, dcoll_last_error, dcoll_version
    public :: dcoll_init, dcoll_initialized, dcoll_dtype_size
    public :: dcoll_abort, dcoll_wtime
    public :: dcoll_local_rank, dcoll_backend_status
    public :: dcoll_group_world, dcoll_new_group, dcoll_group_destroy
    public :: dcoll_split_group, dcoll_group_shrink
    public :: dcoll_neighborhood_create, dcoll_neighborhood_free
    public :: dcoll_neighborhood_degrees
    public :: dcoll_group_backend
    public :: dcoll_work_test
    public :: dcoll_work_free
    public :: dcoll_work_wait_all, dcoll_work_test_any, dcoll_work_wait_any
    public :: dcoll_all_reduce_coalesced, dcoll_all_gather_coalesced
    public :: dcoll_store_tcp_create, dcoll_store_file_create
    public :: dcoll_store_prefix_create, dcoll_store_destroy, dcoll_store_port
    public :: dcoll_world_store
    public :: dcoll_store_set, dcoll_store_get, dcoll_store_add
    public :: dcoll_store_compare_set, dcoll_store_wait, dcoll_store_check
    public :: dcoll_store_delete_key, dcoll_store_num_keys
    public :: dcoll_rendezvous, dcoll_register_rendezvous, dcoll_spawn
    public :: dcoll_register_backend
    public :: dcoll_mem_alloc, dcoll_mem_free

    ! dcoll_init_comm and dcoll_group_comm take or give an INTEGER handle
    ! (use mpi) or a type(MPI_Comm) (use mpi_f08).
    interface dcoll_init_comm
        module procedure init_comm_int
#ifdef DCOLL_HAVE_MPI_F08
        module procedure init_comm_f08
#endif
    end interface
    public :: dcoll_init_comm

    interface dcoll_group_comm
        module procedure group_comm_int
#ifdef DCOLL_HAVE_MPI_F08
        module procedure group_comm_f08
#endif
    end interface
    public :: dcoll_group_comm

    ! The collectives and their plans, generated from the C headers
    ! (gen-fortran.py), each over integer or integer(8) counts. The vector
    ! forms take counts and displacements (0-based, in elements, as in
    ! MPI) as arrays with an entry per group rank; displs may be left out
    ! (packed). The multi-buffer forms take buffers by their C addresses
    ! (c_loc of arrays with the TARGET attribute), as the coalesced forms
    ! do; one count for every buffer.
#include "dcoll_generics.inc"
    public :: dcoll_plan_free

    interface

#include "dcoll_bind_c.inc"

    function c_store_tcp_create(out, host, port, params) &
            bind(C, name='dcoll_store_tcp_create') result(st)
        import
        integer(c_int) :: st
        type(dcoll_store), intent(out) :: out
        character(kind=c_char), intent(in) :: host(*)
        integer(c_int), value :: port
        type(store_params), intent(in) :: params
    end function

    function c_store_file_create(out, path, params) &
            bind(C, name='dcoll_store_file_create') result(st)
        import
        integer(c_int) :: st
        type(dcoll_store), intent(out) :: out
        character(kind=c_char), intent(in) :: path(*)
        type(store_params), intent(in) :: params
    end function

    function c_store_prefix_create(out, prefix, base) &
            bind(C, name='dcoll_store_prefix_create') result(st)
        import
        integer(c_int) :: st
        type(dcoll_store), intent(out) :: out
        character(kind=c_char), intent(in) :: prefix(*)
        type(c_ptr), value :: base
    end function

    function c_world_store(out) bind(C, name='dcoll_world_store') &
            result(st)
        import
        integer(c_int) :: st
        type(dcoll_store), intent(out) :: out
    end function

    function c_store_destroy(store) bind(C, name='dcoll_store_destroy') &
            result(st)
        import
        integer(c_int) :: st
        type(dcoll_store), intent(inout) :: store
    end function

    function c_store_port(store, port) bind(C, name='dcoll_store_port') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        integer(c_int), intent(out) :: port
    end function

    function c_store_set(store, key, value, len) &
            bind(C, name='dcoll_store_set') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        character(kind=c_char), intent(in) :: key(*), value(*)
        integer(c_size_t), value :: len
    end function

    function c_store_get(store, key, buf, cap, len) &
            bind(C, name='dcoll_store_get') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        character(kind=c_char), intent(in) :: key(*)
        character(kind=c_char), intent(out) :: buf(*)
        integer(c_size_t), value :: cap
        integer(c_size_t), intent(out) :: len
    end function

    function c_store_add(store, key, delta, result) &
            bind(C, name='dcoll_store_add') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        character(kind=c_char), intent(in) :: key(*)
        integer(c_int64_t), value :: delta
        integer(c_int64_t), intent(out) :: result
    end function

    function c_store_compare_set(store, key, expected, elen, desired, dlen, &
            buf, cap, len) bind(C, name='dcoll_store_compare_set') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        character(kind=c_char), intent(in) :: key(*), expected(*), desired(*)
        integer(c_size_t), value :: elen, dlen, cap
        character(kind=c_char), intent(out) :: buf(*)
        integer(c_size_t), intent(out) :: len
    end function

    function c_store_wait(store, keys, nkeys, timeout) &
            bind(C, name='dcoll_store_wait') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        type(c_ptr), intent(in) :: keys(*)
        integer(c_int), value :: nkeys
        real(c_double), value :: timeout
    end function

    function c_store_check(store, keys, nkeys, exist) &
            bind(C, name='dcoll_store_check') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        type(c_ptr), intent(in) :: keys(*)
        integer(c_int), value :: nkeys
        integer(c_int), intent(out) :: exist
    end function

    function c_store_delete_key(store, key, deleted) &
            bind(C, name='dcoll_store_delete_key') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        character(kind=c_char), intent(in) :: key(*)
        integer(c_int), intent(out) :: deleted
    end function

    function c_store_num_keys(store, count) &
            bind(C, name='dcoll_store_num_keys') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: store
        integer(c_int64_t), intent(out) :: count
    end function

    function c_rendezvous(url, timeout, store, rank, world_size) &
            bind(C, name='dcoll_rendezvous') result(st)
        import
        integer(c_int) :: st
        character(kind=c_char), intent(in) :: url(*)
        real(c_double), value :: timeout
        type(dcoll_store), intent(out) :: store
        integer(c_int), intent(out) :: rank, world_size
    end function

    function c_register_rendezvous(scheme, handler, arg) &
            bind(C, name='dcoll_register_rendezvous') result(st)
        import
        integer(c_int) :: st
        character(kind=c_char), intent(in) :: scheme(*)
        type(c_funptr), value :: handler
        type(c_ptr), value :: arg
    end function

    function c_spawn(fn, arg, nprocs, params, failure) &
            bind(C, name='dcoll_spawn') result(st)
        import
        integer(c_int) :: st
        type(c_funptr), value :: fn
        type(c_ptr), value :: arg
        integer(c_int), value :: nprocs
        type(spawn_params), intent(in) :: params
        type(dcoll_spawn_failure), intent(out) :: failure
    end function

    function c_register_backend(name, ops, arg) &
            bind(C, name='dcoll_register_backend') result(st)
        import
        integer(c_int) :: st
        character(kind=c_char), intent(in) :: name(*)
        type(dcoll_backend_ops), intent(in) :: ops
        type(c_ptr), value :: arg
    end function

    function c_strlen(s) bind(C, name='strlen') result(n)
        import
        type(c_ptr), value :: s
        integer(c_size_t) :: n
    end function

    function c_status_string(status) bind(C, name='dcoll_status_string') &
            result(p)
        import
        integer(c_int), value :: status
        type(c_ptr) :: p
    end function

    function c_last_error() bind(C, name='dcoll_last_error') result(p)
        import
        type(c_ptr) :: p
    end function

    function c_version(major, minor, patch) bind(C, name='dcoll_version') &
            result(st)
        import
        integer(c_int) :: st
        integer(c_int), intent(out) :: major, minor, patch
    end function

    function c_init(params) bind(C, name='dcoll_init') result(st)
        import
        integer(c_int) :: st
        type(init_params), intent(in) :: params
    end function

    function c_initialized(flag) bind(C, name='dcoll_initialized') result(st)
        import
        integer(c_int) :: st
        integer(c_int), intent(out) :: flag
    end function

    function c_abort(code, reason) bind(C, name='dcoll_abort') result(st)
        import
        integer(c_int) :: st
        integer(c_int), value :: code
        character(kind=c_char), intent(in) :: reason(*)
    end function

    function c_wtime() bind(C, name='dcoll_wtime') result(t)
        import
        real(c_double) :: t
    end function

    function c_local_rank(local_rank, local_size) &
            bind(C, name='dcoll_local_rank') result(st)
        import
        integer(c_int) :: st
        integer(c_int), intent(out) :: local_rank, local_size
    end function

    function c_backend_status(name, available, text) &
            bind(C, name='dcoll_backend_status') result(st)
        import
        integer(c_int) :: st
        character(kind=c_char), intent(in) :: name(*)
        integer(c_int), intent(out) :: available
        type(c_ptr), intent(out) :: text
    end function

    function c_dtype_size(dtype, size) bind(C, name='dcoll_dtype_size') &
            result(st)
        import
        integer(c_int) :: st
        integer(c_int), value :: dtype
        integer(c_size_t), intent(out) :: size
    end function

    function c_group_world(out) bind(C, name='dcoll_group_world') result(st)
        import
        integer(c_int) :: st
        type(dcoll_group), intent(out) :: out
    end function

    function c_new_group(out, ranks, nranks, params) &
            bind(C, name='dcoll_new_group') result(st)
        import
        integer(c_int) :: st
        type(dcoll_group), intent(out) :: out
        integer(c_int), intent(in) :: ranks(*)
        integer(c_int), value :: nranks
        type(group_params), intent(in) :: params
    end function

    function c_split_group(out, parent, color, key, params) &
            bind(C, name='dcoll_split_group') result(st)
        import
        integer(c_int) :: st
        type(dcoll_group), intent(out) :: out
        type(c_ptr), value :: parent
        integer(c_int), value :: color, key
        type(group_params), intent(in) :: params
    end function

    function c_group_shrink(group, out) &
            bind(C, name='dcoll_group_shrink') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        type(dcoll_group), intent(out) :: out
    end function

    function c_neighborhood_create(group, indegree, sources, outdegree, &
            destinations, out) bind(C, name='dcoll_neighborhood_create') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        integer(c_int), value :: indegree, outdegree
        integer(c_int), intent(in) :: sources(*), destinations(*)
        type(dcoll_neighborhood), intent(out) :: out
    end function

    function c_neighborhood_free(nbh) &
            bind(C, name='dcoll_neighborhood_free') result(st)
        import
        integer(c_int) :: st
        type(dcoll_neighborhood), intent(inout) :: nbh
    end function

    ! The bytes an array of any type and rank holds (extent.c, from its
    ! descriptor: Fortran 2018's C side of an assumed-rank dummy).
    function array_bytes(buf) bind(C, name='dcollf_array_bytes') result(n)
        import
        type(*), dimension(..), intent(in) :: buf
        integer(c_int64_t) :: n
    end function

    function c_neighborhood_degrees(nbh, indegree, outdegree) &
            bind(C, name='dcoll_neighborhood_degrees') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: nbh
        integer(c_int), intent(out) :: indegree, outdegree
    end function

    function c_group_destroy(group) bind(C, name='dcoll_group_destroy') &
            result(st)
        import
        integer(c_int) :: st
        type(dcoll_group), intent(inout) :: group
    end function

    function c_group_backend(group, name) &
            bind(C, name='dcoll_group_backend') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        type(c_ptr), intent(out) :: name
    end function

    function c_mem_alloc(group, bytes, ptr) bind(C, name='dcoll_mem_alloc') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        integer(c_size_t), value :: bytes
        type(c_ptr), intent(out) :: ptr
    end function

    function c_mem_free(group, ptr) bind(C, name='dcoll_mem_free') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group, ptr
    end function

    function c_group_comm(group, comm) bind(C, name='dcoll_group_comm') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        integer(c_int), intent(out) :: comm
    end function

    function c_work_test(work, done) bind(C, name='dcoll_work_test') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: work
        integer(c_int), intent(out) :: done
    end function

    function c_work_free(work) bind(C, name='dcoll_work_free') result(st)
        import
        integer(c_int) :: st
        type(dcoll_work), intent(inout) :: work
    end function

    function c_work_wait_all(works, n, failed) &
            bind(C, name='dcoll_work_wait_all') result(st)
        import
        integer(c_int) :: st
        type(dcoll_work), intent(in) :: works(*)
        integer(c_int), value :: n
        integer(c_int), intent(out) :: failed
    end function

    function c_work_test_any(works, n, index, done) &
            bind(C, name='dcoll_work_test_any') result(st)
        import
        integer(c_int) :: st
        type(dcoll_work), intent(in) :: works(*)
        integer(c_int), value :: n
        integer(c_int), intent(out) :: index, done
    end function

    function c_work_wait_any(works, n, index) &
            bind(C, name='dcoll_work_wait_any') result(st)
        import
        integer(c_int) :: st
        type(dcoll_work), intent(in) :: works(*)
        integer(c_int), value :: n
        integer(c_int), intent(out) :: index
    end function

    function c_all_reduce_coalesced(group, bufs, counts, n, dtype, op, opts, &
            work) bind(C, name='dcoll_all_reduce_coalesced') result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        type(c_ptr), intent(in) :: bufs(*)
        integer(c_int64_t), intent(in) :: counts(*)
        integer(c_int), value :: n, dtype, op
        type(dcoll_coll_opts), intent(in), optional :: opts
        type(dcoll_work), intent(out), optional :: work
    end function

    function c_all_gather_coalesced(group, sendbufs, recvbufs, counts, n, &
            dtype, opts, work) bind(C, name='dcoll_all_gather_coalesced') &
            result(st)
        import
        integer(c_int) :: st
        type(c_ptr), value :: group
        type(c_ptr), intent(in) :: sendbufs(*), recvbufs(*)
        integer(c_int64_t), intent(in) :: counts(*)
        integer(c_int), value :: n, dtype
        type(dcoll_coll_opts), intent(in), optional :: opts
        type(dcoll_work), intent(out), optional :: work
    end function

    function c_plan_free(plan) bind(C, name='dcoll_plan_free') result(st)
        import
        integer(c_int) :: st
        type(dcoll_plan), intent(inout) :: plan
    end function

    end interface

    ! For tests: c_sizeof of each bind(C) type, by its C name.
    public :: dcoll_fortran_sizeof

contains

#include "dcoll_count_i8.inc"
#include "dcoll_count_i4.inc"

    ! The size Fortran gives each bind(C) type that mirrors a C struct
    ! (-1: a name it does not know). A test holds these against C's sizeof.
    function dcoll_fortran_sizeof(name) result(n)
        character(len=*), intent(in) :: name
        integer :: n
        type(dcoll_group) :: g
        type(dcoll_work) :: w
        type(dcoll_coll_opts) :: o
        type(init_params) :: ip
        type(dcoll_store) :: st
        type(store_params) :: sp
        type(spawn_params) :: pp
        type(dcoll_spawn_failure) :: sf
        type(dcoll_backend_ops) :: bo
        type(dcoll_backend_call) :: bc
        type(group_params) :: gp
        select case (name)
        case ('dcoll_group_t *')
            n = int(c_sizeof(g))
        case ('dcoll_work_t *')
            n = int(c_sizeof(w))
        case ('dcoll_coll_opts_t')
            n = int(c_sizeof(o))
        case ('dcoll_init_params_t')
            n = int(c_sizeof(ip))
        case ('dcoll_store_t *')
            n = int(c_sizeof(st))
        case ('dcoll_store_params_t')
            n = int(c_sizeof(sp))
        case ('dcoll_spawn_params_t')
            n = int(c_sizeof(pp))
        case ('dcoll_spawn_failure_t')
            n = int(c_sizeof(sf))
        case ('dcoll_backend_ops_t')
            n = int(c_sizeof(bo))
        case ('dcoll_backend_call_t')
            n = int(c_sizeof(bc))
        case ('dcoll_group_params_t')
            n = int(c_sizeof(gp))
        case default
            n = -1
        end select
    end function

    ! A C string as a Fortran string (empty for NULL).
    function f_string(p) result(s)
        type(c_ptr), intent(in) :: p
        character(len=:), allocatable :: s
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n
        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = int(c_strlen(p))
        call c_f_pointer(p, chars, [n])
        allocate(character(len=n) :: s)
        do i = 1, n
            s(i:i) = chars(i)
        end do
    end function

    ! A Fortran string as a NUL-terminated C array (trailing blanks kept
    ! off, as Fortran pads).
    subroutine c_string(s, buf)
        character(len=*), intent(in) :: s
        character(kind=c_char), allocatable, intent(out) :: buf(:)
        integer :: i, n
        n = len_trim(s)
        allocate(buf(n + 1))
        do i = 1, n
            buf(i) = s(i:i)
        end do
        buf(n + 1) = c_null_char
    end subroutine

    function dcoll_status_string(status) result(s)
        integer, intent(in) :: status
        character(len=:), allocatable :: s
        s = f_string(c_status_string(int(status, c_int)))
    end function

    function dcoll_last_error() result(s)
        character(len=:), allocatable :: s
        if (f_err_on) then
            s = f_err
        else
            s = f_string(c_last_error())
        end if
    end function

    ! The address of a buffer for C; a buffer that is not contiguous (an
    ! array section with strides) is refused, since C would read it as if
    ! it were, and a copy would not outlive an async call.
    function addr(buf, fn, name, p) result(ok)
        type(*), dimension(..), target, asynchronous, intent(in) :: buf
        character(len=*), intent(in) :: fn, name
        type(c_ptr), intent(out) :: p
        logical :: ok
        ok = is_contiguous(buf)
        p = c_null_ptr
        if (ok) then
            p = c_loc(buf)
        else
            f_err = fn // ': ' // name // ' is not contiguous (an array ' // &
                    'section with strides?); pass a contiguous copy'
            f_err_on = .true.
        end if
    end function

    function dcoll_version(major, minor, patch) result(st)
        integer, intent(out) :: major, minor, patch
        integer :: st
        integer(c_int) :: a, b, c
        f_err_on = .false.
        st = c_version(a, b, c)
        major = a
        minor = b
        patch = c
    end function

    ! dcoll_init: every argument optional. comm is an INTEGER handle; a
    ! type(MPI_Comm) goes through dcoll_init_comm. timeout bounds the
    ! rendezvous, coll_timeout each collective (0: wait forever), and
    ! on_timeout (DCOLL_ON_TIMEOUT_ABORT or _RETURN) what a timeout does;
    ! tuning names a tuning table in place of $DCOLL_TUNING ('': none).
    function dcoll_init(url, comm, thread_level, backend, timeout, &
            coll_timeout, on_timeout, tuning) result(st)
        character(len=*), intent(in), optional :: url, backend, tuning
        integer, intent(in), optional :: comm, thread_level, on_timeout
        real(8), intent(in), optional :: timeout, coll_timeout
        integer :: st
        type(init_params) :: p
        character(kind=c_char), allocatable, target :: curl(:), &
            cbackend(:), ctuning(:)
        if (present(url)) then
            call c_string(url, curl)
            p%url = c_loc(curl)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_URL)
        end if
        if (present(comm)) then
            p%comm = int(comm, c_int)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_COMM)
        end if
        if (present(thread_level)) then
            p%thread_level = int(thread_level, c_int)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_THREAD_LEVEL)
        end if
        if (present(backend)) then
            call c_string(backend, cbackend)
            p%backend = c_loc(cbackend)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_BACKEND)
        end if
        if (present(timeout)) then
            p%timeout = real(timeout, c_double)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_TIMEOUT)
        end if
        if (present(coll_timeout)) then
            p%coll_timeout = real(coll_timeout, c_double)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_COLL_TIMEOUT)
        end if
        if (present(on_timeout)) then
            p%on_timeout = int(on_timeout, c_int)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_ON_TIMEOUT)
        end if
        if (present(tuning)) then
            call c_string(tuning, ctuning)
            p%tuning = c_loc(ctuning)
            p%mask = ior(p%mask, DCOLL_INIT_PARAM_TUNING)
        end if
        f_err_on = .false.
        st = c_init(p)
    end function

    function init_comm_int(comm) result(st)
        integer, intent(in) :: comm
        integer :: st
        st = dcoll_init(comm=comm)
    end function

#ifdef DCOLL_HAVE_MPI_F08
    function init_comm_f08(comm) result(st)
        type(MPI_Comm), intent(in) :: comm
        integer :: st
        st = dcoll_init(comm=comm%MPI_VAL)
    end function
#endif

    function dcoll_initialized(flag) result(st)
        logical, intent(out) :: flag
        integer :: st
        integer(c_int) :: f
        f_err_on = .false.
        st = c_initialized(f)
        flag = f /= 0
    end function

    ! End the whole job with exit status code, as MPI_Abort does; reason,
    ! if given, is printed first. Does not return.
    function dcoll_abort(code, reason) result(st)
        integer, intent(in) :: code
        character(len=*), intent(in), optional :: reason
        integer :: st
        if (present(reason)) then
            st = c_abort(int(code, c_int), trim(reason) // c_null_char)
        else
            st = c_abort(int(code, c_int), '(no reason given)' // c_null_char)
        end if
    end function

    ! Seconds on a monotonic clock, as MPI_Wtime: take differences.
    function dcoll_wtime() result(t)
        real(c_double) :: t
        t = c_wtime()
    end function

    ! This process's rank among the world's processes on its node, and
    ! their number (to pick a GPU, say).
    function dcoll_local_rank(local_rank, local_size) result(st)
        integer, intent(out) :: local_rank
        integer, intent(out), optional :: local_size
        integer :: st
        integer(c_int) :: r, n
        f_err_on = .false.
        st = c_local_rank(r, n)
        if (st /= DCOLL_SUCCESS) return
        local_rank = r
        if (present(local_size)) local_size = n
    end function

    ! Whether backend name ("mpi", "nccl") can serve collectives here, and
    ! what dcoll found for it.
    function dcoll_backend_status(name, available, text) result(st)
        character(len=*), intent(in) :: name
        logical, intent(out) :: available
        character(len=:), allocatable, intent(out), optional :: text
        integer :: st
        character(kind=c_char), allocatable :: cname(:)
        integer(c_int) :: a
        type(c_ptr) :: p
        call c_string(name, cname)
        a = 0
        p = c_null_ptr
        f_err_on = .false.
        st = c_backend_status(cname, a, p)
        available = a /= 0
        if (present(text)) text = f_string(p)
    end function

    function dcoll_dtype_size(dtype, size) result(st)
        integer, intent(in) :: dtype
        integer, intent(out) :: size
        integer :: st
        integer(c_size_t) :: n
        f_err_on = .false.
        st = c_dtype_size(int(dtype, c_int), n)
        size = int(n)
    end function

    function dcoll_group_world(group) result(st)
        type(dcoll_group), intent(out) :: group
        integer :: st
        f_err_on = .false.
        st = c_group_world(group)
    end function

    ! A group of the world ranks in ranks(:), zero-based as everywhere in
    ! dcoll. Collective over the world. timeout: seconds a collective on
    ! it may wait (0: forever) and on_timeout what a timeout does;
    ! default the world's.
    ! The group params of new_group and split_group; cbackend holds the
    ! backend's C string for as long as p is used.
    subroutine group_params_of(p, cbackend, backend, timeout, on_timeout)
        type(group_params), intent(out) :: p
        character(kind=c_char), allocatable, target, intent(inout) :: &
            cbackend(:)
        character(len=*), intent(in), optional :: backend
        real(8), intent(in), optional :: timeout
        integer, intent(in), optional :: on_timeout
        if (present(backend)) then
            call c_string(backend, cbackend)
            p%backend = c_loc(cbackend)
            p%mask = DCOLL_GROUP_PARAM_BACKEND
        end if
        if (present(timeout)) then
            p%timeout = real(timeout, c_double)
            p%mask = ior(p%mask, DCOLL_GROUP_PARAM_TIMEOUT)
        end if
        if (present(on_timeout)) then
            p%on_timeout = int(on_timeout, c_int)
            p%mask = ior(p%mask, DCOLL_GROUP_PARAM_ON_TIMEOUT)
        end if
    end subroutine

    function dcoll_new_group(group, ranks, backend, timeout, on_timeout) &
            result(st)
        type(dcoll_group), intent(out) :: group
        integer, intent(in) :: ranks(:)
        character(len=*), intent(in), optional :: backend
        real(8), intent(in), optional :: timeout
        integer, intent(in), optional :: on_timeout
        integer :: st
        type(group_params) :: p
        integer(c_int) :: cranks(max(size(ranks), 1))
        character(kind=c_char), allocatable, target :: cbackend(:)
        cranks(1:size(ranks)) = int(ranks, c_int)
        call group_params_of(p, cbackend, backend, timeout, on_timeout)
        f_err_on = .false.
        st = c_new_group(group, cranks, int(size(ranks), c_int), p)
    end function

    ! One group per color out of parent (DCOLL_WORLD for the world),
    ! ranked by key: dcoll_split_group in dcoll/group.h.
    function dcoll_split_group(group, parent, color, key, backend, timeout, &
            on_timeout) result(st)
        type(dcoll_group), intent(out) :: group
        type(dcoll_group), intent(in) :: parent
        integer, intent(in) :: color, key
        character(len=*), intent(in), optional :: backend
        real(8), intent(in), optional :: timeout
        integer, intent(in), optional :: on_timeout
        integer :: st
        type(group_params) :: p
        character(kind=c_char), allocatable, target :: cbackend(:)
        call group_params_of(p, cbackend, backend, timeout, on_timeout)
        f_err_on = .false.
        st = c_split_group(group, parent%ptr, int(color, c_int), &
                           int(key, c_int), p)
    end function

    ! The living ranks of a group one of whose ranks died: dcoll_group_shrink
    ! in dcoll/group.h.
    function dcoll_group_shrink(group, survivors) result(st)
        type(dcoll_group), intent(in) :: group
        type(dcoll_group), intent(out) :: survivors
        integer :: st
        f_err_on = .false.
        st = c_group_shrink(group%ptr, survivors)
    end function

    ! A neighbourhood of group (DCOLL_WORLD: the world), collectively:
    ! this rank receives from the world ranks in sources and sends to
    ! those in destinations (DCOLL_PROC_NULL allowed); dcoll/neighbor.h.
    function dcoll_neighborhood_create(nbh, group, sources, destinations) &
            result(st)
        type(dcoll_neighborhood), intent(out) :: nbh
        type(dcoll_group), intent(in) :: group
        integer, intent(in) :: sources(:), destinations(:)
        integer :: st
        integer(c_int) :: cs(max(size(sources), 1))
        integer(c_int) :: cd(max(size(destinations), 1))
        cs(1:size(sources)) = int(sources, c_int)
        cd(1:size(destinations)) = int(destinations, c_int)
        f_err_on = .false.
        st = c_neighborhood_create(group%ptr, int(size(sources), c_int), &
            cs, int(size(destinations), c_int), cd, nbh)
    end function

    function dcoll_neighborhood_free(nbh) result(st)
        type(dcoll_neighborhood), intent(inout) :: nbh
        integer :: st
        f_err_on = .false.
        st = c_neighborhood_free(nbh)
    end function

    function dcoll_neighborhood_degrees(nbh, indegree, outdegree) result(st)
        type(dcoll_neighborhood), intent(in) :: nbh
        integer, intent(out) :: indegree, outdegree
        integer :: st
        integer(c_int) :: i, o
        f_err_on = .false.
        st = c_neighborhood_degrees(nbh%ptr, i, o)
        if (st == DCOLL_SUCCESS) then
            indegree = int(i)
            outdegree = int(o)
        end if
    end function

    function dcoll_group_destroy(group) result(st)
        type(dcoll_group), intent(inout) :: group
        integer :: st
        f_err_on = .false.
        st = c_group_destroy(group)
    end function

    function dcoll_group_backend(group, name) result(st)
        type(dcoll_group), intent(in) :: group
        character(len=:), allocatable, intent(out) :: name
        integer :: st
        type(c_ptr) :: p
        p = c_null_ptr
        f_err_on = .false.
        st = c_group_backend(group%ptr, p)
        name = f_string(p)
    end function

    ! Memory the group's collectives read in place (API 1.12), as a C
    ! address: c_f_pointer(ptr, array, [n]) makes an array of it, which
    ! any call then takes. Collective over the group, as in C.
    function dcoll_mem_alloc(group, bytes, ptr) result(st)
        type(dcoll_group), intent(in) :: group
        integer(8), intent(in) :: bytes
        type(c_ptr), intent(out) :: ptr
        integer :: st
        ptr = c_null_ptr
        f_err_on = .false.
        if (bytes < 0) then
            f_err = 'dcoll_mem_alloc: bytes is negative'
            f_err_on = .true.
        end if
        st = c_mem_alloc(group%ptr, int(max(bytes, 0_8), c_size_t), ptr)
    end function

    function dcoll_mem_free(group, ptr) result(st)
        type(dcoll_group), intent(in) :: group
        type(c_ptr), intent(in) :: ptr
        integer :: st
        f_err_on = .false.
        st = c_mem_free(group%ptr, ptr)
    end function

    function group_comm_int(group, comm) result(st)
        type(dcoll_group), intent(in) :: group
        integer, intent(out) :: comm
        integer :: st
        integer(c_int) :: c
        f_err_on = .false.
        st = c_group_comm(group%ptr, c)
        if (st == DCOLL_SUCCESS) comm = c
    end function

#ifdef DCOLL_HAVE_MPI_F08
    function group_comm_f08(group, comm) result(st)
        type(dcoll_group), intent(in) :: group
        type(MPI_Comm), intent(out) :: comm
        integer :: st
        integer(c_int) :: c
        f_err_on = .false.
        st = c_group_comm(group%ptr, c)
        if (st == DCOLL_SUCCESS) comm%MPI_VAL = c
    end function
#endif

    function dcoll_work_test(work, done) result(st)
        type(dcoll_work), intent(in) :: work
        logical, intent(out) :: done
        integer :: st
        integer(c_int) :: d
        d = 0
        f_err_on = .false.
        st = c_work_test(work%ptr, d)
        done = d /= 0
    end function

    function dcoll_work_free(work) result(st)
        type(dcoll_work), intent(inout) :: work
        integer :: st
        f_err_on = .false.
        st = c_work_free(work)
    end function

    ! Many works at once. Indices are Fortran's, from 1; DCOLL_NO_WORK
    ! (-1) stands for none. An unset work (dcoll_work()) is skipped.
    function dcoll_work_wait_all(works, failed) result(st)
        type(dcoll_work), intent(in) :: works(:)
        integer, intent(out), optional :: failed
        integer :: st
        integer(c_int) :: f
        f_err_on = .false.
        st = c_work_wait_all(works, int(size(works), c_int), f)
        if (present(failed)) failed = merge(int(f) + 1, DCOLL_NO_WORK, f >= 0)
    end function

    function dcoll_work_test_any(works, index, done) result(st)
        type(dcoll_work), intent(in) :: works(:)
        integer, intent(out) :: index
        logical, intent(out) :: done
        integer :: st
        integer(c_int) :: i, d
        i = DCOLL_NO_WORK
        d = 0
        f_err_on = .false.
        st = c_work_test_any(works, int(size(works), c_int), i, d)
        index = merge(int(i) + 1, DCOLL_NO_WORK, i >= 0)
        done = d /= 0
    end function

    function dcoll_work_wait_any(works, index) result(st)
        type(dcoll_work), intent(in) :: works(:)
        integer, intent(out) :: index
        integer :: st
        integer(c_int) :: i
        i = DCOLL_NO_WORK
        f_err_on = .false.
        st = c_work_wait_any(works, int(size(works), c_int), i)
        index = merge(int(i) + 1, DCOLL_NO_WORK, i >= 0)
    end function

    ! Coalesced forms, as in C: n tensors given by their C addresses (c_loc
    ! of arrays with the TARGET attribute) and their element counts.
    function dcoll_all_reduce_coalesced(group, bufs, counts, n, dtype, op, &
            opts, work) result(st)
        type(dcoll_group), intent(in) :: group
        type(c_ptr), intent(in) :: bufs(*)
        integer(c_int64_t), intent(in) :: counts(*)
        integer, intent(in) :: n, dtype, op
        type(dcoll_coll_opts), intent(in), optional :: opts
        type(dcoll_work), intent(out), optional :: work
        integer :: st
        f_err_on = .false.
        st = c_all_reduce_coalesced(group%ptr, bufs, counts, int(n, c_int), &
                int(dtype, c_int), int(op, c_int), opts, work)
    end function

    function dcoll_all_gather_coalesced(group, sendbufs, recvbufs, counts, &
            n, dtype, opts, work) result(st)
        type(dcoll_group), intent(in) :: group
        type(c_ptr), intent(in) :: sendbufs(*), recvbufs(*)
        integer(c_int64_t), intent(in) :: counts(*)
        integer, intent(in) :: n, dtype
        type(dcoll_coll_opts), intent(in), optional :: opts
        type(dcoll_work), intent(out), optional :: work
        integer :: st
        f_err_on = .false.
        st = c_all_gather_coalesced(group%ptr, sendbufs, recvbufs, counts, &
                int(n, c_int), int(dtype, c_int), opts, work)
    end function

    ! ---- stores: keys and values are Fortran strings ----

    ! The server's limits (max_clients ... idle_close) are those of
    ! dcoll_store_params_t; they matter only where serve is true.
    function dcoll_store_tcp_create(store, host, port, serve, timeout, &
            token, max_clients, max_unauthed, unauthed_frame, &
            idle_timeout, max_memory, idle_close) result(st)
        type(dcoll_store), intent(out) :: store
        character(len=*), intent(in) :: host
        integer, intent(in) :: port
        logical, intent(in), optional :: serve
        real(8), intent(in), optional :: timeout
        character(len=*), intent(in), optional :: token
        integer, intent(in), optional :: max_clients, max_unauthed, &
            unauthed_frame
        real(8), intent(in), optional :: idle_timeout, idle_close
        integer(8), intent(in), optional :: max_memory
        integer :: st
        type(store_params) :: p
        character(kind=c_char), allocatable :: chost(:)
        character(kind=c_char), allocatable, target :: ctoken(:)
        call c_string(host, chost)
        if (present(serve)) then
            if (serve) p%serve = 1
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_SERVE)
        end if
        if (present(timeout)) then
            p%timeout = real(timeout, c_double)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_TIMEOUT)
        end if
        if (present(token)) then
            call c_string(token, ctoken)
            p%token = c_loc(ctoken)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_TOKEN)
        end if
        if (present(max_clients)) then
            p%max_clients = int(max_clients, c_int)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_MAX_CLIENTS)
        end if
        if (present(max_unauthed)) then
            p%max_unauthed = int(max_unauthed, c_int)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_MAX_UNAUTHED)
        end if
        if (present(unauthed_frame)) then
            p%unauthed_frame = int(unauthed_frame, c_int)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_UNAUTHED_FRAME)
        end if
        if (present(idle_timeout)) then
            p%idle_timeout = real(idle_timeout, c_double)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_IDLE_TIMEOUT)
        end if
        if (present(max_memory)) then
            p%max_memory = int(max_memory, c_int64_t)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_MAX_MEMORY)
        end if
        if (present(idle_close)) then
            p%idle_close = real(idle_close, c_double)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_IDLE_CLOSE)
        end if
        f_err_on = .false.
        st = c_store_tcp_create(store, chost, int(port, c_int), p)
    end function

    function dcoll_store_file_create(store, path, timeout) result(st)
        type(dcoll_store), intent(out) :: store
        character(len=*), intent(in) :: path
        real(8), intent(in), optional :: timeout
        integer :: st
        type(store_params) :: p
        character(kind=c_char), allocatable :: cpath(:)
        call c_string(path, cpath)
        if (present(timeout)) then
            p%timeout = real(timeout, c_double)
            p%mask = ior(p%mask, DCOLL_STORE_PARAM_TIMEOUT)
        end if
        f_err_on = .false.
        st = c_store_file_create(store, cpath, p)
    end function

    function dcoll_store_prefix_create(store, prefix, base) result(st)
        type(dcoll_store), intent(out) :: store
        character(len=*), intent(in) :: prefix
        type(dcoll_store), intent(in) :: base
        integer :: st
        character(kind=c_char), allocatable :: cp(:)
        call c_string(prefix, cp)
        f_err_on = .false.
        st = c_store_prefix_create(store, cp, base%p)
    end function

    ! The world's rendezvous store, for the program's keys (API 1.6):
    ! dcoll's own handle, freed at dcoll_finalize.
    function dcoll_world_store(store) result(st)
        type(dcoll_store), intent(out) :: store
        integer :: st
        f_err_on = .false.
        st = c_world_store(store)
    end function

    function dcoll_store_destroy(store) result(st)
        type(dcoll_store), intent(inout) :: store
        integer :: st
        f_err_on = .false.
        st = c_store_destroy(store)
    end function

    function dcoll_store_port(store, port) result(st)
        type(dcoll_store), intent(in) :: store
        integer, intent(out) :: port
        integer :: st
        integer(c_int) :: p
        f_err_on = .false.
        st = c_store_port(store%p, p)
        port = p
    end function

    ! The value is the whole string, trailing blanks included.
    function dcoll_store_set(store, key, value) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: key, value
        integer :: st
        character(kind=c_char), allocatable :: ck(:)
        call c_string(key, ck)
        f_err_on = .false.
        st = c_store_set(store%p, ck, value, int(len(value), c_size_t))
    end function

    ! Waits for key; value gets its first len(value) bytes, blank-padded,
    ! and length (optional) the value's whole length.
    function dcoll_store_get(store, key, value, length) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: key
        character(len=*), intent(out) :: value
        integer, intent(out), optional :: length
        integer :: st
        character(kind=c_char), allocatable :: ck(:)
        integer(c_size_t) :: n
        call c_string(key, ck)
        value = ' '
        n = 0
        f_err_on = .false.
        st = c_store_get(store%p, ck, value, int(len(value), c_size_t), n)
        if (present(length)) length = int(n)
    end function

    function dcoll_store_add(store, key, delta, result) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: key
        integer(8), intent(in) :: delta
        integer(8), intent(out), optional :: result
        integer :: st
        character(kind=c_char), allocatable :: ck(:)
        integer(c_int64_t) :: r
        call c_string(key, ck)
        f_err_on = .false.
        st = c_store_add(store%p, ck, int(delta, c_int64_t), r)
        if (present(result)) result = r
    end function

    ! Sets key to desired if its value is expected ('' for a missing key);
    ! value and length get the value after the call, as in get.
    function dcoll_store_compare_set(store, key, expected, desired, value, &
            length) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: key, expected, desired
        character(len=*), intent(out) :: value
        integer, intent(out), optional :: length
        integer :: st
        character(kind=c_char), allocatable :: ck(:)
        integer(c_size_t) :: n
        call c_string(key, ck)
        value = ' '
        n = 0
        f_err_on = .false.
        st = c_store_compare_set(store%p, ck, expected, &
                int(len(expected), c_size_t), desired, &
                int(len(desired), c_size_t), value, &
                int(len(value), c_size_t), n)
        if (present(length)) length = int(n)
    end function

    ! NUL-terminated copies of keys (trailing blanks off), and their
    ! addresses.
    subroutine c_keys(keys, buf, ptrs)
        character(len=*), intent(in) :: keys(:)
        character(kind=c_char), allocatable, target, intent(out) :: buf(:,:)
        type(c_ptr), allocatable, intent(out) :: ptrs(:)
        integer :: i, j, n
        allocate(buf(len(keys) + 1, size(keys)), ptrs(size(keys)))
        do i = 1, size(keys)
            n = len_trim(keys(i))
            do j = 1, n
                buf(j, i) = keys(i)(j:j)
            end do
            buf(n + 1, i) = c_null_char
            ptrs(i) = c_loc(buf(1, i))
        end do
    end subroutine

    ! Wait for every key; timeout in seconds (absent: the store's).
    function dcoll_store_wait(store, keys, timeout) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: keys(:)
        real(8), intent(in), optional :: timeout
        integer :: st
        character(kind=c_char), allocatable, target :: buf(:,:)
        type(c_ptr), allocatable :: ptrs(:)
        real(c_double) :: t
        call c_keys(keys, buf, ptrs)
        t = -1
        if (present(timeout)) t = real(timeout, c_double)
        f_err_on = .false.
        st = c_store_wait(store%p, ptrs, int(size(keys), c_int), t)
    end function

    function dcoll_store_check(store, keys, exist) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: keys(:)
        logical, intent(out) :: exist
        integer :: st
        character(kind=c_char), allocatable, target :: buf(:,:)
        type(c_ptr), allocatable :: ptrs(:)
        integer(c_int) :: e
        call c_keys(keys, buf, ptrs)
        e = 0
        f_err_on = .false.
        st = c_store_check(store%p, ptrs, int(size(keys), c_int), e)
        exist = e /= 0
    end function

    function dcoll_store_delete_key(store, key, deleted) result(st)
        type(dcoll_store), intent(in) :: store
        character(len=*), intent(in) :: key
        logical, intent(out), optional :: deleted
        integer :: st
        character(kind=c_char), allocatable :: ck(:)
        integer(c_int) :: d
        call c_string(key, ck)
        d = 0
        f_err_on = .false.
        st = c_store_delete_key(store%p, ck, d)
        if (present(deleted)) deleted = d /= 0
    end function

    function dcoll_store_num_keys(store, count) result(st)
        type(dcoll_store), intent(in) :: store
        integer(8), intent(out) :: count
        integer :: st
        integer(c_int64_t) :: n
        f_err_on = .false.
        st = c_store_num_keys(store%p, n)
        count = n
    end function

    ! ---- rendezvous, spawn and the backend registry ----

    function dcoll_rendezvous(url, store, rank, world_size, timeout) &
            result(st)
        character(len=*), intent(in) :: url
        type(dcoll_store), intent(out) :: store
        integer, intent(out) :: rank, world_size
        real(8), intent(in), optional :: timeout
        integer :: st
        character(kind=c_char), allocatable :: cu(:)
        integer(c_int) :: r, n
        real(c_double) :: t
        call c_string(url, cu)
        t = 0
        if (present(timeout)) t = real(timeout, c_double)
        f_err_on = .false.
        st = c_rendezvous(cu, t, store, r, n)
        rank = r
        world_size = n
    end function

    ! handler: c_funloc of a bind(C) function with dcoll_rendezvous_fn's
    ! arguments (see dcoll/rendezvous.h).
    function dcoll_register_rendezvous(scheme, handler, arg) result(st)
        character(len=*), intent(in) :: scheme
        type(c_funptr), intent(in) :: handler
        type(c_ptr), intent(in), optional :: arg
        integer :: st
        character(kind=c_char), allocatable :: cs(:)
        type(c_ptr) :: a
        call c_string(scheme, cs)
        a = c_null_ptr
        if (present(arg)) a = arg
        f_err_on = .false.
        st = c_register_rendezvous(cs, handler, a)
    end function

    function dcoll_spawn(fn, nprocs, arg, master_addr, master_port, &
            timeout, failure, nnodes, node_rank, on_failure) result(st)
        type(c_funptr), intent(in) :: fn
        integer, intent(in) :: nprocs
        type(c_ptr), intent(in), optional :: arg
        character(len=*), intent(in), optional :: master_addr
        integer, intent(in), optional :: master_port
        real(8), intent(in), optional :: timeout
        type(dcoll_spawn_failure), intent(out), optional :: failure
        integer, intent(in), optional :: nnodes, node_rank
        integer, intent(in), optional :: on_failure
        integer :: st
        type(spawn_params) :: p
        type(dcoll_spawn_failure) :: f
        character(kind=c_char), allocatable, target :: caddr(:)
        type(c_ptr) :: a
        a = c_null_ptr
        if (present(arg)) a = arg
        if (present(master_addr)) then
            call c_string(master_addr, caddr)
            p%master_addr = c_loc(caddr)
            p%mask = ior(p%mask, DCOLL_SPAWN_PARAM_MASTER_ADDR)
        end if
        if (present(master_port)) then
            p%master_port = int(master_port, c_int)
            p%mask = ior(p%mask, DCOLL_SPAWN_PARAM_MASTER_PORT)
        end if
        if (present(timeout)) then
            p%timeout = real(timeout, c_double)
            p%mask = ior(p%mask, DCOLL_SPAWN_PARAM_TIMEOUT)
        end if
        if (present(nnodes) .or. present(node_rank)) then
            if (present(nnodes)) p%nnodes = int(nnodes, c_int)
            if (present(node_rank)) p%node_rank = int(node_rank, c_int)
            p%mask = ior(p%mask, DCOLL_SPAWN_PARAM_NODES)
        end if
        if (present(on_failure)) then
            p%on_failure = int(on_failure, c_int)
            p%mask = ior(p%mask, DCOLL_SPAWN_PARAM_ON_FAILURE)
        end if
        f_err_on = .false.
        st = c_spawn(fn, a, int(nprocs, c_int), p, f)
        if (present(failure)) failure = f
    end function

    function dcoll_register_backend(name, ops, arg) result(st)
        character(len=*), intent(in) :: name
        type(dcoll_backend_ops), intent(in) :: ops
        type(c_ptr), intent(in), optional :: arg
        integer :: st
        character(kind=c_char), allocatable :: cn(:)
        type(c_ptr) :: a
        call c_string(name, cn)
        a = c_null_ptr
        if (present(arg)) a = arg
        f_err_on = .false.
        st = c_register_backend(cn, ops, a)
    end function

    ! ---- the generated collectives' helpers ----

    ! A refusal made here (f_err) goes to C in o, which refuses the call
    ! as its own refusals are: numbered, every rank told by the group's
    ! rules. why holds the message until the call returns.
    subroutine refusal(o, why)
        type(dcoll_coll_opts), intent(inout) :: o
        character(kind=c_char), allocatable, target, intent(out) :: why(:)
        call c_string(f_err, why)
        o%refusal = c_loc(why)
        o%mask = ior(o%mask, DCOLL_COLL_OPT_REFUSAL)
        f_err_on = .false.
    end subroutine

    ! A neighbourhood's array of counts, displacements or layouts needs an
    ! entry per neighbour (out: per destination, else per source): a
    ! shorter one is refused here, where its length is known.
    function degree_enough(nbh, n, out, fn, name) result(ok)
        type(dcoll_neighborhood), intent(in) :: nbh
        integer, intent(in) :: n
        logical, intent(in) :: out
        character(len=*), intent(in) :: fn, name
        logical :: ok
        integer(c_int) :: din, dout, want
        character(len=24) :: got, need
        ok = .true.
        if (c_neighborhood_degrees(nbh%ptr, din, dout) /= DCOLL_SUCCESS) &
            return
        want = merge(dout, din, out)
        if (n >= want) return
        ok = .false.
        write (got, '(i0)') n
        write (need, '(i0)') want
        f_err = fn // ': ' // name // ' has ' // trim(got) // &
                ' entries, fewer than the neighbourhood''s ' // trim(need)
        if (out) then
            f_err = f_err // ' destinations'
        else
            f_err = f_err // ' sources'
        end if
    end function

    ! ---- the generated vector forms' helpers ----

    ! An array of counts shorter than the group is refused here, where
    ! its length is known (C cannot see it). A NON-MEMBER handle skips it.
    function long_enough(group, a, fn, name) result(ok)
        type(dcoll_group), intent(in) :: group
        integer(c_int64_t), intent(in) :: a(:)
        character(len=*), intent(in) :: fn, name
        logical :: ok
        integer(c_int) :: n
        character(len=24) :: got, want
        ok = .true.
        if (c_group_size(group%ptr, n) /= DCOLL_SUCCESS) return
        if (n == DCOLL_NON_MEMBER .or. size(a) >= n) return
        ok = .false.
        write (got, '(i0)') size(a)
        write (want, '(i0)') n
        f_err = fn // ': ' // name // ' has ' // trim(got) // &
                ' entries, fewer than the group''s ' // trim(want) // ' ranks'
        f_err_on = .true.
    end function

    ! The C address of an optional array of counts or displacements.
    function opt_loc(a) result(p)
        integer(c_int64_t), intent(in), target, optional :: a(:)
        type(c_ptr) :: p
        p = c_null_ptr
        if (present(a)) then
            if (size(a) > 0) p = c_loc(a(1))
        end if
    end function

    ! ---- plans (persistent collectives) ----

    function dcoll_plan_free(plan) result(st)
        type(dcoll_plan), intent(inout) :: plan
        integer :: st
        f_err_on = .false.
        st = c_plan_free(plan)
    end function

end module dcoll
