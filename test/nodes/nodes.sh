# Nodes on one machine (sourced): each node a network namespace with a
# host name of its own, all on one private bridge in a hub namespace, at
# addresses only these namespaces have (10.77.0.K/24, node K).
#   nodes_up N        make nodes 1..N (exit 77 where that is not allowed)
#   on K CMD...       run CMD on node K (its network, its host name)
#   node_addr K       node K's address;   node_name K: its host name
#   nodes_mpi_env     OpenMPI between the nodes, over their network only
#   nodes_join_env    that, for processes no MPI launcher starts (skips
#                     where OpenMPI has no ompi-server to join them)
#   nodes_mpirun_env HOSTFILE AGENT
#                     for mpirun on node 1 over nodes 1 and 2 (2 slots
#                     each) through OpenMPI's launch agent; $NODES_MPIRUN
#   $NODES_TMP        a directory for the test's files
#   bad MSG...        say what failed; the test ends with exit $fail
# Everything goes at exit, failed or skipped or not: processes, namespaces,
# files.
NODES_ID=dcn$$
NODES_NET=10.77.0
NODES_N=0
export NODES_ID
NODES_TMP=$(mktemp -d)
trap nodes_down EXIT
trap 'exit 1' INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=1; }

node_name() { echo "dcnode$1"; }
node_addr() { echo "$NODES_NET.$1"; }
node_ns() { echo "$NODES_ID-$1"; }

nodes_down() {
    # A test's own cleanup first (NODES_CLEAN: a command).
    [ -z "${NODES_CLEAN:-}" ] || eval "$NODES_CLEAN"
    rm -rf "$NODES_TMP"
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NODES_ID-"); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
    done
    sleep 0.2
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NODES_ID-"); do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
}

nodes_up() {
    n=$1
    if [ "$(id -u)" != 0 ]; then
        echo "nodes: network namespaces need root: skipping"; exit 77
    fi
    for p in ip unshare nsenter; do
        command -v $p >/dev/null || { echo "nodes: $p missing: skipping"; exit 77; }
    done
    hub=$(node_ns hub)
    if ! ip netns add "$hub" 2>/dev/null; then
        echo "nodes: cannot make a network namespace here: skipping"; exit 77
    fi
    ip netns exec "$hub" ip link add br0 type bridge &&
        ip netns exec "$hub" ip link set br0 up || {
        echo "nodes: no bridge in a namespace here: skipping"; exit 77; }
    k=1
    while [ "$k" -le "$n" ]; do
        ns=$(node_ns "$k")
        ip netns add "$ns" || return 1
        # One end on the node as eth0, the other on the hub's bridge.
        ip link add "$NODES_ID-$k" type veth peer name "${NODES_ID}h$k" ||
            return 1
        ip link set "$NODES_ID-$k" netns "$ns"
        ip link set "${NODES_ID}h$k" netns "$hub"
        ip netns exec "$ns" ip link set "$NODES_ID-$k" name eth0
        ip netns exec "$ns" ip addr add "$(node_addr "$k")/24" dev eth0
        ip netns exec "$ns" ip link set eth0 up
        ip netns exec "$ns" ip link set lo up
        ip netns exec "$hub" ip link set "${NODES_ID}h$k" master br0
        ip netns exec "$hub" ip link set "${NODES_ID}h$k" up
        k=$((k + 1))
    done
    # Every node knows every node's name (on lays /etc/netns/NS/hosts
    # over /etc/hosts).
    k=1
    while [ "$k" -le "$n" ]; do
        mkdir -p "/etc/netns/$(node_ns "$k")"
        {
            echo "127.0.0.1 localhost"
            j=1
            while [ "$j" -le "$n" ]; do
                echo "$(node_addr "$j") $(node_name "$j")"
                j=$((j + 1))
            done
        } >"/etc/netns/$(node_ns "$k")/hosts"
        k=$((k + 1))
    done
    NODES_N=$n
}

# The node's network and host name, and its /etc/hosts; the rest of the
# machine as it is (ip netns exec would remount /sys, hiding the cgroups
# slurmd needs).
on() {
    k=$1; shift
    nsenter --net="/var/run/netns/$(node_ns "$k")" unshare --uts --mount \
        sh -c 'mount --bind "$1" /etc/hosts && hostname "$0" && shift &&
               exec "$@"' \
        "$(node_name "$k")" "/etc/netns/$(node_ns "$k")/hosts" "$@"
}

nodes_mpi_env() {
    export OMPI_MCA_btl=self,vader,tcp
    export OMPI_MCA_btl_tcp_if_include=$NODES_NET.0/24
    export OMPI_MCA_oob_tcp_if_include=$NODES_NET.0/24
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_hwloc_base_binding_policy=none
    export PMIX_MCA_gds=hash
    # The nodes are namespaces of one machine, their ranks more than its
    # cores: Open MPI yields while it waits, as it does under an mpirun
    # that sees the oversubscription (srun and hand-started ranks cannot
    # tell it): grid.sbatch's 8 ranks on 2 cores took 43 s spinning, 10
    # s yielding.
    export OMPI_MCA_mpi_yield_when_idle=1
}

nodes_join_env() {
    unset OMPI_COMM_WORLD_SIZE PMIX_RANK PMI_RANK PMI_SIZE PMI_PORT PMI_FD
    nodes_mpi_env
    export UCX_NET_DEVICES=eth0,lo UCX_TLS=self,sm,tcp UCX_WARN_UNUSED_ENV_VARS=n
    if [ "${DCOLL_MPI:-openmpi}" = openmpi ] &&
        ! command -v ompi-server >/dev/null 2>&1; then
        echo "ompi-server not found: skipping"; exit 77
    fi
}

# Call before nodes_up: under another MPI the test skips.
nodes_mpirun_env() {
    if [ "${DCOLL_MPI:-openmpi}" != openmpi ]; then
        echo "nodes: the launch agent here is OpenMPI's (plm_rsh_agent): skipping"
        exit 77
    fi
    NODES_MPIRUN=${DCOLL_MPIRUN:-$(command -v mpirun)}
    printf '%s slots=2\n%s slots=2\n' "$(node_name 1)" "$(node_name 2)" >"$1"
    export OMPI_MCA_plm_rsh_agent="$2"
    nodes_mpi_env
}
