#!/usr/bin/env bash
# ramp over real shaped links (issue 37): network namespaces joined by a
# bridge (scripts/netns.sh, prefix rlb, 10.97.0.0/24), the link toward the
# receiver shaped by tc's token bucket (tbf RATE burst 565kb latency 30ms on
# the bridge's port toward it), examples/link_load as the job (senders
# stream 256 KiB Xfers plus short requests to rank 0; every message checked
# exactly once). Cases:
#   base      one sender, no shaping (the reference for the queue's delay)
#   r100 r200 r400   one sender over a link of 100, 200, 400 Mbit/s
#   incast    four senders into one receiver, its link 200 Mbit/s
#   twojobs   two independent jobs (two ramp-run, their own job keys and
#             ports), senders on two hosts, receivers on one, its link
#             200 Mbit/s shared
#   loss      one sender, 200 Mbit/s, RAMP_FAULT_LOSS=0.01
# Progress on stderr; the table on stdout: goodput / link rate, the share of
# bytes sent beyond first transmissions (retransmissions, with the little
# control traffic: an upper bound), Jain's fairness index of the senders'
# shares (bytes delivered while every sender still had messages arriving), the short
# requests' latency (p50/p99) and its p50 minus the unshaped one, the
# shaped queue's mean backlog as delay (tc -s qdisc, sampled every 100 ms),
# its drops, the datagrams the kernel dropped at ramp's sockets (UDP
# RcvbufErrors+SndbufErrors of every namespace: with the queue's drops, what
# ramp's retransmissions had to repair) and those lost in IP reassembly
# (ReasmFails: ramp's datagrams above the link's MTU travel as fragments),
# and the issue's targets beside them. A job that does not finish within
# its watchdog is killed and reported as "collapsed" with the rate it
# achieved (from its progress lines).
#
#   scripts/link-bench.sh [--secs S] [--watchdog S] [--runs N]
#                         [--bin [LABEL=]DIR]... [--env LABEL VAR=VALUE]... [--cases LIST]
#     --secs S       sending time of each job (default 5)
#     --watchdog S   a job still running after S seconds is killed (default S+30)
#     --runs N       runs of each case; the table shows medians (default 3)
#     --bin [LABEL=]DIR  where ramp-run and examples/link_load are (default:
#                    target/release, built first with cargo build --release);
#                    given twice or more (old and new builds), each case runs
#                    with each build in turn, alternated, one table row each
#     --env LABEL VAR=VALUE  VAR=VALUE for the workers of build LABEL only
#                    (repeatable; e.g. the same build twice, once with
#                    RAMP_MAX_DATAGRAM=8192)
#     --cases LIST   comma-separated subset of base,r100,r200,r400,incast,
#                    twojobs,loss (default all)
#     --report DIR   only print the table of an earlier run whose output
#                    was kept in DIR (the last progress line names it)
# Environment variables RAMP_* of the caller reach the workers (e.g.
# RAMP_MAX_DATAGRAM); RAMP_TRANSPORT=udp and RAMP_INTERFACE=eth0 are set.
# Needs root (namespaces, tc); exit 2 where namespaces cannot be made.
# Namespaces, qdiscs and jobs are removed on exit, also on Ctrl-C.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETNS=(bash "$ROOT/scripts/netns.sh" -p rlb -s 10.97.0)
MASTER_IP=10.97.0.1
SECS=5
WATCHDOG=""
BINS=()
LABELS=()
RUNS=3
CASES="base,r100,r200,r400,incast,twojobs,loss"
REPORT=""
declare -A ENVS=()

die() { echo "link-bench: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --secs) [[ "${2:-}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--secs: a number"; SECS=$2; shift 2 ;;
        --watchdog) [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--watchdog: whole seconds"; WATCHDOG=$2; shift 2 ;;
        --runs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive number"; RUNS=$2; shift 2 ;;
        --bin)
            v=${2:-}
            l="b$((${#BINS[@]} + 1))"
            if [[ "$v" == *=* ]]; then l=${v%%=*}; v=${v#*=}; fi
            [[ "$l" =~ ^[A-Za-z0-9_-]+$ ]] || die "--bin: a label of letters, digits, - and _: $l"
            [[ -d "$v" ]] || die "--bin: not a directory: $v"
            BINS+=("$(cd "$v" && pwd)")
            LABELS+=("$l")
            shift 2
            ;;
        --env)
            [[ "${3:-}" =~ ^RAMP_[A-Z0-9_]+=[^[:space:]]*$ ]] || die "--env LABEL RAMP_VAR=VALUE"
            ENVS[${2:-}]+=" $3"
            shift 3
            ;;
        --cases) CASES=${2:-}; shift 2 ;;
        --report) [[ -d "${2:-}" ]] || die "--report: not a directory: ${2:-}"; REPORT=$2; shift 2 ;;
        -h|--help) sed -n '2,48p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done
[[ -n "$WATCHDOG" ]] || WATCHDOG=$(awk -v s="$SECS" 'BEGIN { printf "%d", s + 30 }')
for c in ${CASES//,/ }; do
    [[ " base r100 r200 r400 incast twojobs loss " == *" $c "* ]] || die "unknown case: $c"
done

log() { echo "link-bench: $*" >&2; }

# table DIR: the table of the jobs' output kept in DIR
table() {
    python3 "$ROOT/scripts/link-bench-table.py" "$1" "$CASES"
}

if [[ -n "$REPORT" ]]; then
    table "$REPORT"
    exit
fi

if [[ ${#BINS[@]} -eq 0 ]]; then
    log "cargo build --release --bin ramp-run --example link_load"
    (cd "$ROOT" && cargo build --release --bin ramp-run --example link_load) >&2 || die "build failed"
    BINS=("$ROOT/target/release")
    LABELS=(this)
fi
for b in "${BINS[@]}"; do
    [[ -x "$b/ramp-run" && -x "$b/examples/link_load" ]] || die "$b/ramp-run or $b/examples/link_load is missing"
done
[[ "$ROOT" != *" "* ]] || die "the path $ROOT has a space (ramp-run --wrap splits on spaces)"

"${NETNS[@]}" check >/dev/null || exit 2

TMP=$(mktemp -d /tmp/link-bench.XXXXXX)
JOBS=()
SAMPLER=""
cleanup() {
    local p
    for p in "${JOBS[@]}" $SAMPLER; do
        # timeout leads its own process group: the job's launcher and workers
        kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    done
    JOBS=()
    SAMPLER=""
    "${NETNS[@]}" down >/dev/null 2>&1 || log "netns.sh down failed"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

"${NETNS[@]}" down >/dev/null 2>&1
"${NETNS[@]}" up 5 >/dev/null || die "netns.sh up failed"
log "namespaces rlb0..rlb4 up; load: $(cut -d' ' -f1-3 /proc/loadavg); secs $SECS, watchdog $WATCHDOG s"

# start_job BIN NAME MAP [VAR=VALUE...]: a job of the ranks in MAP, in the background
start_job() {
    local bin=$1 name=$2 map=$3
    shift 3
    local n
    n=$(echo "$map" | tr ',' '\n' | wc -l)
    local xs=(-x RAMP_TRANSPORT=udp -x RAMP_INTERFACE=eth0)
    local v
    for v in "$@"; do xs+=(-x "$v"); done
    timeout -k 5 "$WATCHDOG" "$bin/ramp-run" -n "$n" --master-ip "$MASTER_IP" \
        --wrap "bash $ROOT/scripts/netns.sh -p rlb pick $map {rank}" "${xs[@]}" \
        "$bin/examples/link_load" --secs "$SECS" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    JOBS+=($!)
    echo $! >"$TMP/$name.pid"
}

# sample DEV: tc's queue every 100 ms, into $TMP/qdisc.samples
sample() {
    : >"$TMP/qdisc.samples"
    (
        while :; do
            tc -s -j qdisc show dev "$1" 2>/dev/null >>"$TMP/qdisc.samples" && echo >>"$TMP/qdisc.samples"
            sleep 0.1
        done
    ) &
    SAMPLER=$!
}
stop_sampler() {
    [[ -n "$SAMPLER" ]] && { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; }
    SAMPLER=""
}

# wait_jobs NAME...: waits for the jobs, reporting progress; records exit codes
wait_jobs() {
    local name pid rc
    for name in "$@"; do
        pid=$(cat "$TMP/$name.pid")
        while kill -0 "$pid" 2>/dev/null; do
            sleep 1
            local p
            p=$(grep 'link_load: progress' "$TMP/$name.out" | tail -n 1 | sed 's/link_load: progress //')
            [[ -n "$p" ]] && log "  $name: $p"
        done
        wait "$pid"
        rc=$?
        echo "$rc" >"$TMP/$name.rc"
        [[ $rc -eq 124 || $rc -eq 137 ]] && log "  $name: still running after $WATCHDOG s: killed (collapsed)"
        [[ $rc -ne 0 && $rc -ne 124 && $rc -ne 137 ]] && log "  $name: exit status $rc: $(tail -n 3 "$TMP/$name.err" | tr '\n' ' ')"
    done
    JOBS=()
}

# udp_drops: datagrams the kernel dropped at ramp's sockets in every
# namespace (UDP RcvbufErrors and SndbufErrors, summed), and datagrams whose
# IP fragments could not be reassembled (Ip ReasmFails: a fragment lost, or
# the reassembly memory, ipfrag_high_thresh, full of incomplete datagrams
# held for ipfrag_time): "rcvbuf sndbuf reasmfails"
udp_drops() {
    local ns
    for ns in rlb0 rlb1 rlb2 rlb3 rlb4; do
        ip netns exec "$ns" cat /proc/net/snmp 2>/dev/null
    done | awk '
        /^Udp:/ && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) { if ($i == "RcvbufErrors") ri = i; if ($i == "SndbufErrors") si = i } }
        /^Udp:/ && $2 ~ /^[0-9]+$/ { r += $(ri); s += $(si) }
        /^Ip:/ && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i == "ReasmFails") fi = i }
        /^Ip:/ && $2 ~ /^[0-9]+$/ { f += $(fi) }
        END { printf "%d %d %d\n", r, s, f }'
}

# run_case CASE RUN BUILD RATE MAP... : shapes (RATE or off), runs one job per
# MAP with build BUILD (an index of BINS), waits; files CASE.LABEL.RUN.*
run_case() {
    local c=$1 k=$2 b=$3 rate=$4
    shift 4
    local tag="$c.${LABELS[$b]}.$k"
    log "$tag: rate $rate; $# job(s): $*"
    # fresh namespaces for every run: a collapsed run leaves the receiver's
    # IP reassembly memory full of incomplete datagrams for ipfrag_time
    # (30 s), which would drop the next run's fragments
    "${NETNS[@]}" down >/dev/null 2>&1
    "${NETNS[@]}" up 5 >/dev/null || die "netns.sh up failed"
    "${NETNS[@]}" shape 0 "$rate" >/dev/null || die "shape failed"
    sample rlbv0
    local drops0
    drops0=$(udp_drops)
    local i=0 names=() m
    for m in "$@"; do
        local env=()
        [[ $c == loss ]] && env=(RAMP_FAULT_LOSS=0.01)
        # shellcheck disable=SC2206
        env+=(${ENVS[${LABELS[$b]}]:-})
        start_job "${BINS[$b]}" "$tag.$i" "$m" "${env[@]}"
        names+=("$tag.$i")
        i=$((i + 1))
    done
    wait_jobs "${names[@]}"
    stop_sampler
    cp "$TMP/qdisc.samples" "$TMP/$tag.qdisc"
    echo "$drops0 $(udp_drops)" >"$TMP/$tag.sock"
}

T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for c in ${CASES//,/ }; do
    for ((k = 1; k <= RUNS; k++)); do
        for ((b = 0; b < ${#BINS[@]}; b++)); do
            case $c in
                base) run_case base $k $b off 0,1 ;;
                r100) run_case r100 $k $b 100mbit 0,1 ;;
                r200) run_case r200 $k $b 200mbit 0,1 ;;
                r400) run_case r400 $k $b 400mbit 0,1 ;;
                incast) run_case incast $k $b 200mbit 0,1,2,3,4 ;;
                twojobs) run_case twojobs $k $b 200mbit 0,1 0,2 ;;
                loss) run_case loss $k $b 200mbit 0,1 ;;
            esac
        done
    done
done
log "all cases in $(($(date +%s) - T0)) s; load: $(cut -d' ' -f1-3 /proc/loadavg); the jobs' output is in $TMP"

{
    echo "secs $SECS"
    echo "runs $RUNS"
    echo "load $LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)"
    for ((b = 0; b < ${#BINS[@]}; b++)); do
        echo "build ${LABELS[$b]} ${BINS[$b]}${ENVS[${LABELS[$b]}]:-}"
    done
} >"$TMP/meta"
table "$TMP"
