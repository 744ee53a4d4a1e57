#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for testing ramp under srun
# (--mpi=pmi2 and --mpi=pmix).
#
#   scripts/slurm.sh up      install what is missing (apt-get install -y slurm-wlm
#                            munge libpmix2 libpmix-dev), write the configuration, start munged,
#                            slurmctld and slurmd, wait until the node is idle
#                            (idempotent: what runs already is kept)
#   scripts/slurm.sh down    stop the daemons `up` started and remove what it made
#   scripts/slurm.sh check   exit 0 if `srun -n 1 true` runs, else non-zero with
#                            the reason (starts nothing)
#   scripts/slurm.sh status  the daemons, sinfo and the MPI plugins
#
# The cluster: one node (this host, NodeAddr 127.0.0.1) with CPUs = nproc in
# partition "ramp" (the default), ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none, no accounting, AuthType=auth/munge. More tasks than
# CPUs need `srun -O` (--overcommit). State, spool, logs and pid files live
# in $RAMP_SLURM_DIR (default /var/tmp/ramp-slurm); the configuration is
# /etc/slurm/slurm.conf (so a plain `srun` finds it), written only when no
# other configuration is there (ours carries the marker line below), and
# removed by `down`. libpmix2 must be installed before slurmd starts for
# `srun --mpi=pmix`, hence installed here too, with libpmix-dev: Debian's
# mpi_pmix plugin dlopens pmix2/lib/libpmix.so, the unversioned name only
# the -dev package provides (without it srun says "can not load PMIx
# library"; a fresh machine that got libpmix2 from openmpi-bin has no -dev).
#
# Exit status 2 (with a message) when this machine cannot run the daemons
# (not root, no apt-get to install them, a foreign slurm.conf), so callers
# can skip.

set -uo pipefail

DIR="${RAMP_SLURM_DIR:-/var/tmp/ramp-slurm}"
CONF=/etc/slurm/slurm.conf
MARK="# written by ramp scripts/slurm.sh"
PKGS=(slurm-wlm munge libpmix2 libpmix-dev)

say() { echo "slurm.sh: $*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "cannot run a Slurm cluster here: $*"; exit 2; }

usage() {
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1
}

host() { hostname -s 2>/dev/null || hostname; }

# Whether the process with the pid in file $1 runs (and is $2).
running() {
    local pid
    [ -s "$1" ] || return 1
    pid="$(cat "$1" 2>/dev/null)" || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && grep -q "$2" "/proc/$pid/comm"
}

install_missing() {
    local missing=() p
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 ||
        cannot "missing packages (${missing[*]}) and no apt-get to install them"
    say "apt-get install -y ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ||
        { DEBIAN_FRONTEND=noninteractive apt-get update &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } ||
        cannot "apt-get install ${missing[*]} failed"
}

# write_conf: status 0 when the configuration changed (daemons must restart).
write_conf() {
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        cannot "$CONF exists and was not written by this script; not touching it"
    fi
    local h cpus
    h="$(host)"
    cpus="$(nproc)"
    mkdir -p /etc/slurm "$DIR/ctld" "$DIR/spool" "$DIR/log" || die "cannot create $DIR"
    cat >"$CONF.tmp" <<EOF
$MARK (scripts/slurm.sh down removes it)
ClusterName=ramp
SlurmctldHost=$h(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MailProg=/bin/true
KillWait=5
InactiveLimit=0
MinJobAge=10
NodeName=$h NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ramp Nodes=$h Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    if ! cmp -s "$CONF.tmp" "$CONF" 2>/dev/null; then
        mv "$CONF.tmp" "$CONF"
        return 0
    fi
    rm -f "$CONF.tmp"
    return 1
}

start_munge() {
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        say "creating /etc/munge/munge.key"
        (umask 077 && dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null) ||
            die "cannot write /etc/munge/munge.key"
    fi
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
    say "starting munged"
    runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
    touch "$DIR/munged.ours"
    local i
    for i in $(seq 50); do
        munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "munged runs but munge | unmunge fails (see /var/log/munge/munged.log)"
}

node_state() { sinfo -h -N -o '%t' 2>/dev/null | head -n 1; }

up() {
    [ "$(id -u)" -eq 0 ] || cannot "needs root (to install packages and start munged, slurmctld, slurmd)"
    install_missing
    mkdir -p "$DIR" || die "cannot create $DIR"
    local changed=0
    write_conf && changed=1
    start_munge
    if [ $changed -eq 1 ]; then
        # a new configuration: restart what runs with the old one
        stop_daemons
    fi
    if ! running "$DIR/slurmctld.pid" slurmctld; then
        say "starting slurmctld"
        /usr/sbin/slurmctld -i || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
    fi
    if ! running "$DIR/slurmd.pid" slurmd; then
        say "starting slurmd"
        /usr/sbin/slurmd || die "slurmd did not start (see $DIR/log/slurmd.log)"
    fi
    local i s=""
    for i in $(seq 150); do
        s="$(node_state)"
        case "$s" in
            idle|mix|alloc) break ;;
            down*|drain*) scontrol update nodename="$(host)" state=resume >/dev/null 2>&1 ;;
        esac
        sleep 0.2
    done
    case "$s" in
        idle|mix|alloc) say "node $(host) is $s; srun --mpi=list: $(srun --mpi=list 2>&1 | tr -s '\n ' ' ')" ;;
        *) die "the node did not become idle (state '${s:-none}'; see $DIR/log/)" ;;
    esac
}

# stop_pid FILE NAME: SIGTERM, then SIGKILL after 5 s.
stop_pid() {
    local pid i
    running "$1" "$2" || { rm -f "$1"; return 0; }
    pid="$(cat "$1")"
    kill "$pid" 2>/dev/null
    for i in $(seq 50); do
        [ -d "/proc/$pid" ] || break
        sleep 0.1
    done
    [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -f "$1"
}

stop_daemons() {
    stop_pid "$DIR/slurmd.pid" slurmd
    stop_pid "$DIR/slurmctld.pid" slurmctld
}

down() {
    [ "$(id -u)" -eq 0 ] || cannot "needs root"
    stop_daemons
    if [ -e "$DIR/munged.ours" ]; then
        stop_pid /run/munge/munged.pid munged
        rm -f "$DIR/munged.ours"
    fi
    if [ -e "$CONF" ] && grep -qF "$MARK" "$CONF"; then
        rm -f "$CONF"
    fi
    rm -rf "$DIR"
    say "stopped; removed $DIR and $CONF"
}

check() {
    command -v srun >/dev/null 2>&1 || { say "srun is not installed (scripts/slurm.sh up installs slurm-wlm)"; exit 2; }
    local s out
    s="$(node_state)"
    [ -n "$s" ] || { say "no Slurm controller answers (sinfo shows no node; run scripts/slurm.sh up)"; exit 2; }
    if ! out="$(timeout 30 srun -n 1 true 2>&1)"; then
        say "srun -n 1 true failed (node state '$s'): $(echo "$out" | head -n 3)"
        exit 2
    fi
    echo "slurm.sh: srun works (node $(host): $s; $(srun --mpi=list 2>&1 | grep -o 'pmi2\|pmix\b' | sort -u | tr '\n' ' '))"
}

status() {
    local d
    for d in slurmctld slurmd; do
        if running "$DIR/$d.pid" "$d"; then echo "$d: running (pid $(cat "$DIR/$d.pid"))"; else echo "$d: stopped"; fi
    done
    pgrep -x munged >/dev/null && echo "munged: running" || echo "munged: stopped"
    sinfo 2>&1
    srun --mpi=list 2>&1
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    check) check ;;
    status) status ;;
    *) usage ;;
esac
