# A private SLURM's shared parts (sourced by test/slurm/slurm.sh and
# test/nodes/slurm.sh), everything under one directory of the test's.
#   slurm_tools                  exit 77 (skip) unless SLURM and munge are
#                                installed
#   slurm_fail DIR MSG...        say what failed and the end of each log in
#                                DIR, then exit 1
#   slurm_munge DIR              start munged with a key and socket of its
#                                own under DIR/munge (pid in DIR/munge/pid)
#   slurm_free_port PORT         PORT, or the first after it, such that it
#                                and the next one are in no TCP socket of
#                                this network namespace
#   slurm_conf_common DIR PORT   the slurm.conf lines both clusters share:
#                                controller on PORT, slurmd on PORT + 1,
#                                munge, PMIx, no cgroups, state and the
#                                controller's files under DIR

slurm_tools() {
    for p in munged slurmctld slurmd srun sbatch sinfo; do
        command -v "$p" >/dev/null 2>&1 || {
            echo "slurm: $p not installed (apt-get install slurm-wlm munge): skipping"
            exit 77
        }
    done
}

slurm_fail() {
    d=$1; shift
    echo "slurm: $*"
    for f in "$d"/*.log; do echo "--- $f"; tail -20 "$f"; done
    exit 1
}

slurm_free_port() {
    p=$1
    # Every local port in use, from the kernel's tables (hex, column 2).
    used=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
           awk 'NR > 1 { split($2, a, ":"); print a[2] }' | sort -u)
    while :; do
        h=$(printf '%04X' "$p") h1=$(printf '%04X' $((p + 1)))
        echo "$used" | grep -qx -e "$h" -e "$h1" || break
        p=$((p + 2))
    done
    echo "$p"
}

slurm_munge() {
    mkdir -p "$1/munge"
    dd if=/dev/urandom of="$1/munge/key" bs=1024 count=1 2>/dev/null
    chmod 700 "$1/munge"; chmod 400 "$1/munge/key"
    munged --force --key-file="$1/munge/key" --socket="$1/munge/sock" \
        --pid-file="$1/munge/pid" --log-file="$1/munged.log" \
        --seed-file="$1/munge/seed"
}

slurm_conf_common() {
    cat <<CONF
SlurmctldPort=$2
SlurmdPort=$(($2 + 1))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$1/munge/sock
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$1/state
SlurmctldPidFile=$1/slurmctld.pid
SlurmctldLogFile=$1/slurmctld.log
ReturnToService=2
CONF
}
