#!/usr/bin/env bash
# A real one-node SLURM cluster on this machine, for the tests of profiles/slurm.
#
#   harness.sh install       install Debian's slurm-wlm and munge when absent (needs root)
#   harness.sh start DIR     write a one-node configuration under DIR (partitions `debug`, the default, and
#                            `gpu`, both that node), start munged, slurmctld and slurmd, wait until the node is
#                            idle; prints `SLURM_CONF=/etc/slurm/slurm.conf`
#   harness.sh stop DIR      stop the three daemons by the pids in DIR, restore /etc/slurm/slurm.conf
#                            (idempotent)
#
# Everything (munge key and socket, state, spool, logs, pid files) lives under DIR; only the
# configuration must sit at the default path /etc/slurm/slurm.conf, because the Snakemake jobstep
# executor removes SLURM_CONF from the environment of its nested `srun`. A slurm.conf found there
# that this script did not write is moved to DIR/slurm.conf.orig and put back by `stop`.
# Exit status 3 means "cannot run here" (not root, packages unavailable): the tests skip with the
# message, CI fails.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# One-node SLURM written by tests/slurm/harness.sh"

die() { echo "slurm harness: $1" >&2; exit "${2:-1}"; }

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null; then
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "slurm-wlm and munge are not installed and this is not root: cannot install them" 3
    command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get" 3
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge >/dev/null; } || die "apt-get install slurm-wlm munge failed" 3
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
    local dir=$1 name pidfile pid
    for name in slurmd slurmctld munged; do
        pidfile="$dir/$name.pid"
        if pid_alive "$pidfile"; then
            pid=$(cat "$pidfile")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$pidfile"
    done
    if [ -f "$dir/slurm.conf.orig" ]; then
        mv -f "$dir/slurm.conf.orig" "$CONF"
    elif grep -qs "^$MARK" "$CONF"; then
        rm -f "$CONF"
    fi
}

start() {
    local dir=$1
    [ "$(id -u)" = 0 ] || die "slurmd must run as root to start jobs; this is uid $(id -u)" 3
    install
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 700 "$dir"
    stop "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"

    local host cpus mem overrides=""
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {print int($2 / 1024) - 2000}' /proc/meminfo)
    # SLURM_HARNESS_CPUS / SLURM_HARNESS_MEM_MB: a node that declares more than the host has (config_overrides), so
    # that a profile's real requests (measure: 8 CPUs, 24000 MB) are accepted and shown; the jobs stay tiny.
    if [ -n "${SLURM_HARNESS_CPUS:-}" ] && [ "$SLURM_HARNESS_CPUS" -gt "$cpus" ]; then
        cpus=$SLURM_HARNESS_CPUS; overrides="SlurmdParameters=config_overrides"
    fi
    if [ -n "${SLURM_HARNESS_MEM_MB:-}" ] && [ "$SLURM_HARNESS_MEM_MB" -gt "$mem" ]; then
        mem=$SLURM_HARNESS_MEM_MB; overrides="SlurmdParameters=config_overrides"
    fi

    # munge: its own key, socket, pid and seed files
    if [ ! -s "$dir/munge/munge.key" ]; then
        head -c 1024 /dev/urandom > "$dir/munge/munge.key"
        chmod 400 "$dir/munge/munge.key"
    fi
    munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed" \
        --force || die "munged did not start; see $dir/munged.log" 3

    mkdir -p "$(dirname "$CONF")"
    if [ -f "$CONF" ] && ! grep -qs "^$MARK" "$CONF"; then
        mv "$CONF" "$dir/slurm.conf.orig"
    fi
    cat > "$dir/slurm.conf" <<EOF
$MARK
ClusterName=rollout-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
$overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$host Default=NO MaxTime=INFINITE State=UP
EOF
    cp "$dir/slurm.conf" "$CONF.tmp" && mv -f "$CONF.tmp" "$CONF"
    unset SLURM_CONF
    slurmctld -c || die "slurmctld did not start; see $dir/slurmctld.log" 3
    slurmd -c || die "slurmd did not start; see $dir/slurmd.log" 3

    local state=""
    for _ in $(seq 120); do
        state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null || true)
        [ "$state" = idle ] && break
        sleep 0.5
    done
    [ "$state" = idle ] || die "node $host is '${state:-unreachable}' after 60 s, not idle; see $dir/*.log" 3
    echo "SLURM_CONF=$CONF"
}

case "${1:-}" in
    install) install ;;
    start) [ -n "${2:-}" ] || die "usage: $0 start DIR" 2; start "$2" ;;
    stop) [ -n "${2:-}" ] || die "usage: $0 stop DIR" 2; stop "$2" ;;
    *) die "usage: $0 install | start DIR | stop DIR" 2 ;;
esac
