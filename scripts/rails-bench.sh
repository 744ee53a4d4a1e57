#!/usr/bin/env bash
# Rails on real links (issue 38): two network namespaces joined by the
# bridge (eth0, the launcher's network too) and one direct veth pair
# (rail1) (scripts/netns.sh -p rrb -s 10.92.0: rrb0 and rrb1, rail1 on
# 10.92.1.0/24), examples/link_load as the job (rank 1 streams 64 KiB Xfers
# and short requests into rank 0; every message checked exactly once).
# Both links are shaped to RATE in each direction (eth0: the bridge's
# ports, netns.sh shape; rail1: netns.sh rail-shape).
#
# events: RAMP_RAILS=eth0,rail1; after SETTLE s the rail that carries the
#   data (eth0 or rail1: the one whose tx bytes grew most in the last 0.3 s)
#   goes down, SETTLE s later up again; SETTLE s later the rail then
#   carrying the data fails silently ("carrier_silent": its frames go to a
#   MAC nobody has, both ways; the link stays up, sends succeed), SETTLE s
#   later works again ("silent_off"); SETTLE s later both links go down
#   for PART s, then up; SETTLE s later the sending ends (link_load
#   --stop-file). Measured from rank 0's progress lines (bytes delivered,
#   every 20 ms, wall clock) and the sender namespace's link counters (tx
#   bytes of eth0 and rail1, sampled every 20 ms), by
#   scripts/rails-bench-table.py:
#     pause_ms     after "carrier_down" and "carrier_silent": the longest pause in delivery (no
#                  byte delivered between two samples) across the event or
#                  within 1 s after it
#     failover_ms  the extra time the next MiB took to arrive after the
#                  event (next_MiB_ms) beyond what the rate of the second
#                  before gives
#     recovery_ms  after "carrier_up": from the event until that rail sent
#                  more than 256 KiB again (data, not probes), "-" if not
#                  within SETTLE s
#     resume_ms    after "both_up": from the links' return to the first
#                  delivery (the PART s of the partition excluded)
#     carried      what each link sent between this event and the next
# plot: the events case's sequence with `ramp bench --rails` as the job
#   (rank 1 streams 1 MiB messages, striped; Mbit/s sent on each path every
#   50 ms, path events from the paths' states, link events from the rails'
#   operstate), RUNS runs; from each, ramp bench's figures
#   (src/bin/ramp/bench_rails_trace.rs), measured from the sample that saw
#   the link event to the first sample whose bytes cross the threshold:
#     failover_ms  a link down -> the other rail sends >= half its rate
#     rejoin_ms    a link up -> its rail sends >= a tenth of its rate again
#     resume_ms    the first link up after both were down -> new data
#                  acknowledged >= a tenth of that rail's rate
#   (the rate: RATE when the rails are shaped equal, else measured);
#   run 1's table printed and its PNG written to --plot FILE (default
#   rails-failover.png)
# throughput: link_load --secs SECS over RAMP_RAILS=eth0 (one rail) and
#   over RAMP_RAILS=eth0,rail1 (two), the same shaping: goodput, two / one,
#   one rail's goodput / RATE and its packets retransmitted.
# rtt: `ramp bench --rails --rtt ITERS` (short round trips, both ranks busy
#   polling) over RAMP_RAILS=eth0 and over eth0,rail1, alternated in each
#   run, the same shaping: median round trip, two / one.
#
#   scripts/rails-bench.sh [--runs N] [--rate RATE] [--settle S] [--part S]
#                          [--secs S] [--cases events,throughput,plot,rtt]
#                          [--plot FILE.png] [--iters N]
#     --runs N      runs of each case; medians printed (default 3)
#     --rate RATE   tc rate of each link (default 200mbit; "off": unshaped)
#     --rate2 RATE  tc rate of rail1 alone (default: RATE; unequal rails)
#     --xfer BYTES  link_load's transfer size (default 65536 in the events
#                   case, 1048576 in the throughput case, as issue 38's
#                   targets; striping starts at RAMP_STRIPE_MIN, 262144)
#     --settle S    seconds between events (default 3)
#     --part S      seconds both links are down (default 3; keep it below
#                   RAMP_PEER_TIMEOUT_MS, 10 s by default)
#     --secs S      sending time of a throughput run (default 5)
#     --plot FILE   the PNG of the plot case (default rails-failover.png)
#     --iters N     round trips of an rtt run (default 20000)
#     --ns P:A.B    the namespaces' prefix and subnet (default rrb:10.92:
#                   rrb0, rrb1, eth0 on 10.92.0.0/24, rail1 on 10.92.1.0/24),
#                   so that two runs on one machine do not meet
# Uses target/release/ramp-run, target/release/ramp and target/release/examples/link_load
# (built first with cargo build --release). Needs root; exit 2 where
# namespaces cannot be made. Everything is removed on exit, also on Ctrl-C.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NSP=rrb NET=10.92
RUNS=3 RATE=200mbit RATE2= XFER= SETTLE=3 PART=3 SECS=5 CASES=events,throughput,plot,rtt PLOT=rails-failover.png ITERS=20000

die() { echo "rails-bench: $*" >&2; exit 2; }
log() { echo "rails-bench: $*" >&2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive number"; RUNS=$2 ;;
        --rate) [[ "${2:-}" =~ ^([0-9]+[kmg]?bit|off)$ ]] || die "--rate: e.g. 200mbit or off"; RATE=$2 ;;
        --rate2) [[ "${2:-}" =~ ^[0-9]+[kmg]?bit$ ]] || die "--rate2: e.g. 100mbit"; RATE2=$2 ;;
        --xfer) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--xfer: bytes"; XFER=$2 ;;
        --settle) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--settle: whole seconds"; SETTLE=$2 ;;
        --part) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--part: whole seconds"; PART=$2 ;;
        --secs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--secs: whole seconds"; SECS=$2 ;;
        --cases) [[ "${2:-}" =~ ^(events|throughput|plot|rtt)(,(events|throughput|plot|rtt))*$ ]] || die "--cases: events,throughput,plot,rtt"; CASES=$2 ;;
        --ns) [[ "${2:-}" =~ ^([a-z]{2,5}):([0-9]{1,3}\.[0-9]{1,3})$ ]] || die "--ns: e.g. rrb:10.92"; NSP=${BASH_REMATCH[1]} NET=${BASH_REMATCH[2]} ;;
        --iters) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--iters: round trips"; ITERS=$2 ;;
        --plot) [[ -n "${2:-}" ]] || die "--plot: a file name"; PLOT=$2 ;;
        *) die "unknown option $1 (see the head of $0)" ;;
    esac
    shift 2
done
NETNS=(bash "$ROOT/scripts/netns.sh" -p "$NSP" -s "$NET.0")
MASTER_IP=$NET.0.1
WRAP="bash $ROOT/scripts/netns.sh -p $NSP -s $NET.0 pick 0,1 {rank}"
"${NETNS[@]}" check >/dev/null || exit 2
log "cargo build --release --bin ramp-run --bin ramp --example link_load"
(cd "$ROOT" && cargo build --release -j 2 --bin ramp-run --bin ramp --example link_load) >&2 || die "build failed"
BIN="$ROOT/target/release"
TMP=$(mktemp -d /tmp/rails-bench.XXXXXX)
cleanup() { "${NETNS[@]}" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

now_ms() { echo $(( ${EPOCHREALTIME/./} / 1000 )); }

# net: fresh namespaces, rail1, both links shaped to RATE
net() {
    cleanup
    "${NETNS[@]}" up 2 >/dev/null && "${NETNS[@]}" rails 1 >/dev/null || die "netns.sh up/rails failed"
    if [[ "$RATE" != off ]]; then
        "${NETNS[@]}" shape 0 "$RATE" && "${NETNS[@]}" shape 1 "$RATE" &&
            "${NETNS[@]}" rail-shape 1 "${RATE2:-$RATE}" || die "shaping failed"
    fi
}

# job OUT RAILS ARGS...: link_load in rrb0 (rank 0) and rrb1 (rank 1), in the background
job() {
    local out=$1 rails=$2
    shift 2
    timeout -k 5 300 "$BIN/ramp-run" -n 2 --master-ip "$MASTER_IP" \
        --wrap "$WRAP" \
        -x RAMP_TRANSPORT=udp -x "RAMP_RAILS=$rails" \
        "$BIN/examples/link_load" "$@" >"$out" 2>"$out.err" </dev/null &
    JOB=$!
}

# the sender namespace's tx bytes of eth0 and rail1 every 20 ms: "unix_ms eth0 rail1"
sampler() {
    "${NETNS[@]}" exec 1 bash -c 'd=/sys/class/net; while :; do
        echo $(( ${EPOCHREALTIME/./} / 1000 )) $(<$d/eth0/statistics/tx_bytes) $(<$d/rail1/statistics/tx_bytes)
        sleep 0.02; done' >"$1" 2>/dev/null &
    SAMPLER=$!
}

# carrier LINKS: 0 if eth0 sent more than rail1 over the last 15 samples, else 1
carrier() {
    tail -n 16 "$1" | awk 'NR == 1 { e = $2; r = $3 } END { print ($2 - e >= $3 - r) ? 0 : 1 }'
}

# silent K on|off: rail K (0: eth0) drops every frame without an error in
# both directions (each end's neighbour entry for the other points to a
# MAC nobody has; the link stays up, sends succeed), or works again
silent() {
    local k=$1 i dev a0 a1
    if (( k == 0 )); then dev=eth0 a0=$NET.0.10 a1=$NET.0.11; else dev=rail$k a0=$NET.$k.1 a1=$NET.$k.2; fi
    for i in 0 1; do
        local peer=$a1
        (( i == 0 )) || peer=$a0
        if [[ $2 == on ]]; then
            ip -n "$NSP$i" neigh replace "$peer" lladdr 02:00:00:00:00:0$i dev "$dev" nud permanent
        else
            ip -n "$NSP$i" neigh del "$peer" dev "$dev" 2>/dev/null || true
        fi
    done
}

events_run() {
    local r=$1 dir="$TMP/events$r" c
    mkdir -p "$dir"
    net
    sampler "$dir/links"
    job "$dir/out" eth0,rail1 --xfer "${XFER:-65536}" --secs 100000 --progress-ms 20 --stop-file "$dir/stop"
    sequence "$dir"
    log "events run $r (carrier: rail $c): exit $(cat "$dir/rc"); $(grep -E 'link_load: (PASS|FAIL)' "$dir/out")"
}

# sequence DIR: the events, written to DIR/events; the job ($JOB) ends
# after the last (DIR/stop), its status in DIR/rc; c: the last carrier
sequence() {
    local dir=$1
    : >"$dir/events"
    sleep "$SETTLE"
    c=$(carrier "$dir/links")
    echo "$(now_ms) carrier_down $c" >>"$dir/events"; "${NETNS[@]}" rail "$c" down
    sleep "$SETTLE"
    echo "$(now_ms) carrier_up $c" >>"$dir/events"; "${NETNS[@]}" rail "$c" up
    sleep "$SETTLE"
    c=$(carrier "$dir/links")
    echo "$(now_ms) carrier_silent $c" >>"$dir/events"; silent "$c" on
    sleep "$SETTLE"
    echo "$(now_ms) silent_off $c" >>"$dir/events"; silent "$c" off
    sleep "$SETTLE"
    echo "$(now_ms) both_down -" >>"$dir/events"; "${NETNS[@]}" rail 0 down; "${NETNS[@]}" rail 1 down
    sleep "$PART"
    "${NETNS[@]}" rail 0 up; "${NETNS[@]}" rail 1 up; echo "$(now_ms) both_up -" >>"$dir/events"
    sleep "$SETTLE"
    echo "$(now_ms) stop -" >>"$dir/events"; touch "$dir/stop"
    wait "$JOB"; echo "$?" >"$dir/rc"
    kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null
}

# RATE in Mbit/s for ramp bench's figures when both rails are shaped to it
rate_mbit() {
    [[ "$RATE" == off || ( -n "$RATE2" && "$RATE2" != "$RATE" ) ]] && return
    local n=${RATE%%[!0-9]*} u=${RATE##*[0-9]}
    case $u in
        kbit) echo "--rate-mbit $(( n / 1000 ))" ;;
        mbit) echo "--rate-mbit $n" ;;
        gbit) echo "--rate-mbit $(( n * 1000 ))" ;;
        bit) echo "--rate-mbit $(( n / 1000000 ))" ;;
    esac
}

# rails JOB DIR RAILS ARGS...: `ramp bench --rails ARGS` in rrb0 and rrb1
# over RAILS, in the background, its output in DIR/out
rails_job() {
    local dir=$1 rails=$2
    shift 2
    timeout -k 5 300 "$BIN/ramp-run" -n 2 --master-ip "$MASTER_IP" \
        --wrap "$WRAP" \
        -x RAMP_TRANSPORT=udp -x "RAMP_RAILS=$rails" -x RAMP_VERBOSE=1 \
        "$BIN/ramp" bench --rails "$@" >"$dir/out" 2>"$dir/out.err" </dev/null &
    JOB=$!
}

# the events with `ramp bench --rails` as the job (ends by itself after
# the sequence's time); run 1's PNG to PLOT, its table printed
plot_run() {
    local r=$1 dir="$TMP/plot$r" secs=$(( 6 * SETTLE + PART + 1 ))
    mkdir -p "$dir"
    net
    sampler "$dir/links"
    # shellcheck disable=SC2046 # rate_mbit: none or two words
    rails_job "$dir" eth0,rail1 --secs "$secs" --plot "$dir/rails.png" $(rate_mbit)
    sequence "$dir"
    log "plot run $r: exit $(cat "$dir/rc"); $(grep -E 'bench-rails: (PASS|FAIL)' "$dir/out")"
    grep -E '^bench-rails: figure' "$dir/out" | sed "s/^/rails-bench: run $r: /" >&2
    (( r == 1 )) || return 0
    cp "$dir/rails.png" "$PLOT" 2>/dev/null && log "plot: $(realpath "$PLOT")"
    grep -E '^bench-rails: (event|mean|total|plot|figure)' "$dir/out"
    grep -E 'ramp: path ' "$dir/out.err" | sed 's/^/rails-bench: verbose: /'
    sed 's/^/rails-bench: outside event (unix_ms what rail): /' "$dir/events"
}

# one_and_two KIND R: run R of KIND (tput: link_load's goodput; rtt: short
# round trips) over one rail, then over two
one_and_two() {
    local kind=$1 r=$2 rails dir what
    for rails in eth0 eth0,rail1; do
        dir="$TMP/$kind$r-${rails/,/+}"
        mkdir -p "$dir"
        net
        if [[ $kind == rtt ]]; then
            rails_job "$dir" "$rails" --rtt "$ITERS" && what='bench-rails: rtt'
        else
            job "$dir/out" "$rails" --xfer "${XFER:-1048576}" --secs "$SECS" --progress-ms 0 &&
                what='link_load: total'
        fi
        wait "$JOB"; echo "$?" >"$dir/rc"
        log "$kind run $r over $rails: exit $(cat "$dir/rc"); $(grep "$what" "$dir/out")"
    done
}

echo "rails-bench: load before: $(uptime)"
for (( r = 1; r <= RUNS; r++ )); do
    [[ ",$CASES," == *,events,* ]] && events_run "$r"
    [[ ",$CASES," == *,throughput,* ]] && one_and_two tput "$r"
    [[ ",$CASES," == *,plot,* ]] && plot_run "$r"
    [[ ",$CASES," == *,rtt,* ]] && one_and_two rtt "$r"
done
echo "rails-bench: $0 --ns $NSP:$NET --runs $RUNS --rate $RATE${RATE2:+ --rate2 $RATE2}${XFER:+ --xfer $XFER} --settle $SETTLE --part $PART --secs $SECS --iters $ITERS --cases $CASES"
echo "rails-bench: load after: $(uptime)"
echo "rails-bench: outputs kept in $TMP"
python3 "$ROOT/scripts/rails-bench-table.py" "$TMP" "$SETTLE" "$RATE"
