#!/usr/bin/env bash
# Rails on real links (issue 38): two network namespaces joined by the
# bridge (eth0, the launcher's network too) and one direct veth pair
# (rail1) (scripts/netns.sh -p rrb -s 10.92.0: rrb0 and rrb1, rail1 on
# 10.92.1.0/24), examples/link_load as the job (rank 1 streams 64 KiB Xfers
# and short requests into rank 0; every message checked exactly once).
# Both links are shaped to RATE in each direction (eth0: the bridge's
# ports, netns.sh shape; rail1: netns.sh rail-shape).
#
# events: RAMP_RAILS=eth0,rail1; after SETTLE s rail 1 goes down, SETTLE s
#   later up again, SETTLE s later both links go down for PART s, then up;
#   SETTLE s later the sending ends (link_load --stop-file). Measured from
#   rank 0's progress lines (bytes delivered, every 20 ms, wall clock) and
#   the sender namespace's link counters (tx bytes of eth0 and rail1,
#   sampled every 20 ms):
#     stall_ms    the longest time without any delivery that ends within
#                 SETTLE s after the event (from the last delivery before
#                 it to the first after it): the failover time after
#                 "rail1 down", the resume time after "both up" (the
#                 partition's own PART s excluded: measured from the up)
#     resume_ms   from the event to the first delivery after that stall
#     rail1_ms    after "rail1 up": from the event until rail1 carried
#                 more than 256 KiB (data again: recovery), or "-" if not
#                 within SETTLE s
#     carried     which links carried data (tx bytes) between this event
#                 and the next
# throughput: link_load --secs SECS over RAMP_RAILS=eth0 (one rail) and
#   over RAMP_RAILS=eth0,rail1 (two), the same shaping: goodput.
#
#   scripts/rails-bench.sh [--runs N] [--rate RATE] [--settle S] [--part S]
#                          [--secs S] [--cases events,throughput]
#     --runs N      runs of each case; medians printed (default 3)
#     --rate RATE   tc rate of each link (default 200mbit; "off": unshaped)
#     --settle S    seconds between events (default 3)
#     --part S      seconds both links are down (default 3; keep it below
#                   RAMP_PEER_TIMEOUT_MS, 10 s by default)
#     --secs S      sending time of a throughput run (default 5)
# Uses target/release/ramp-run and target/release/examples/link_load
# (built first with cargo build --release). Needs root; exit 2 where
# namespaces cannot be made. Everything is removed on exit, also on Ctrl-C.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETNS=(bash "$ROOT/scripts/netns.sh" -p rrb -s 10.92.0)
MASTER_IP=10.92.0.1
RUNS=3 RATE=200mbit SETTLE=3 PART=3 SECS=5 CASES=events,throughput

die() { echo "rails-bench: $*" >&2; exit 2; }
log() { echo "rails-bench: $*" >&2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive number"; RUNS=$2 ;;
        --rate) [[ "${2:-}" =~ ^([0-9]+[kmg]?bit|off)$ ]] || die "--rate: e.g. 200mbit or off"; RATE=$2 ;;
        --settle) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--settle: whole seconds"; SETTLE=$2 ;;
        --part) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--part: whole seconds"; PART=$2 ;;
        --secs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--secs: whole seconds"; SECS=$2 ;;
        --cases) [[ "${2:-}" =~ ^(events|throughput)(,(events|throughput))*$ ]] || die "--cases: events,throughput"; CASES=$2 ;;
        *) die "unknown option $1 (see the head of $0)" ;;
    esac
    shift 2
done
"${NETNS[@]}" check >/dev/null || exit 2
log "cargo build --release --bin ramp-run --example link_load"
(cd "$ROOT" && cargo build --release -j 2 --bin ramp-run --example link_load) >&2 || die "build failed"
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
            "${NETNS[@]}" rail-shape 1 "$RATE" || die "shaping failed"
    fi
}

# job OUT RAILS ARGS...: link_load in rrb0 (rank 0) and rrb1 (rank 1), in the background
job() {
    local out=$1 rails=$2
    shift 2
    timeout -k 5 300 "$BIN/ramp-run" -n 2 --master-ip "$MASTER_IP" \
        --wrap "bash $ROOT/scripts/netns.sh -p rrb -s 10.92.0 pick 0,1 {rank}" \
        -x RAMP_TRANSPORT=udp -x "RAMP_RAILS=$rails" \
        "$BIN/examples/link_load" --xfer 65536 "$@" >"$out" 2>"$out.err" </dev/null &
    JOB=$!
}

# the sender namespace's tx bytes of eth0 and rail1 every 20 ms: "unix_ms eth0 rail1"
sampler() {
    "${NETNS[@]}" exec 1 bash -c 'd=/sys/class/net; while :; do
        echo $(( ${EPOCHREALTIME/./} / 1000 )) $(<$d/eth0/statistics/tx_bytes) $(<$d/rail1/statistics/tx_bytes)
        sleep 0.02; done' >"$1" 2>/dev/null &
    SAMPLER=$!
}

events_run() {
    local r=$1 dir="$TMP/events$r"
    mkdir -p "$dir"
    net
    sampler "$dir/links"
    job "$dir/out" eth0,rail1 --secs 100000 --progress-ms 20 --stop-file "$dir/stop"
    : >"$dir/events"
    sleep "$SETTLE"
    echo "$(now_ms) rail1_down" >>"$dir/events"; "${NETNS[@]}" rail 1 down
    sleep "$SETTLE"
    echo "$(now_ms) rail1_up" >>"$dir/events"; "${NETNS[@]}" rail 1 up
    sleep "$SETTLE"
    echo "$(now_ms) both_down" >>"$dir/events"; "${NETNS[@]}" rail 0 down; "${NETNS[@]}" rail 1 down
    sleep "$PART"
    "${NETNS[@]}" rail 0 up; "${NETNS[@]}" rail 1 up; echo "$(now_ms) both_up" >>"$dir/events"
    sleep "$SETTLE"
    echo "$(now_ms) stop" >>"$dir/events"; touch "$dir/stop"
    wait "$JOB"; echo "$?" >"$dir/rc"
    kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null
    log "events run $r: exit $(cat "$dir/rc"); $(grep -E 'link_load: (PASS|FAIL)' "$dir/out")"
}

throughput_run() {
    local r=$1 rails dir
    for rails in eth0 eth0,rail1; do
        dir="$TMP/tput$r-${rails/,/+}"
        mkdir -p "$dir"
        net
        job "$dir/out" "$rails" --secs "$SECS" --progress-ms 0
        wait "$JOB"; echo "$?" >"$dir/rc"
        log "throughput run $r over $rails: exit $(cat "$dir/rc"); $(grep 'link_load: total' "$dir/out")"
    done
}

for (( r = 1; r <= RUNS; r++ )); do
    [[ ",$CASES," == *,events,* ]] && events_run "$r"
    [[ ",$CASES," == *,throughput,* ]] && throughput_run "$r"
done
echo "rails-bench: $0 --runs $RUNS --rate $RATE --settle $SETTLE --part $PART --secs $SECS --cases $CASES"
echo "rails-bench: load: $(uptime)"
python3 - "$TMP" "$SETTLE" <<'EOF'
import glob, os, re, statistics, sys
tmp, settle = sys.argv[1], int(sys.argv[2]) * 1000
med = lambda v: statistics.median(v) if v else None
fmt = lambda v: "-" if v is None else f"{v:.0f}"
rows = {}
for d in sorted(glob.glob(f"{tmp}/events*")):
    rc = open(f"{d}/rc").read().strip()
    prog = []
    for l in open(f"{d}/out"):
        if l.startswith("link_load: progress "):
            kv = dict(x.split("=", 1) for x in l.split()[2:] if "=" in x)
            prog.append((int(kv["unix_ms"]), int(kv["delivered"])))
    links = [tuple(map(int, l.split())) for l in open(f"{d}/links") if len(l.split()) == 3]
    ev = [(int(t), n) for t, n in (l.split() for l in open(f"{d}/events"))]
    # delivery instants: samples whose count grew
    grew = [prog[i][0] for i in range(1, len(prog)) if prog[i][1] > prog[i - 1][1]]
    passed = "PASS" if any("link_load: PASS" in l for l in open(f"{d}/out")) else "FAIL"
    print(f"run {os.path.basename(d)}: exit {rc} {passed}")
    for k, (t, name) in enumerate(ev):
        if name in ("stop", "both_down"):
            continue
        # the longest gap between deliveries ending within settle after t
        gaps = [(b - a, a, b) for a, b in zip(grew, grew[1:]) if t < b <= t + settle]
        g = max(gaps, default=None)
        stall = g[0] if g else None
        resume = g[2] - t if g else None
        if name == "both_up" and g:
            stall = g[2] - t  # the partition itself excluded: from the up
        nxt = ev[k + 1][0] if k + 1 < len(ev) else t + settle
        w = [x for x in links if t <= x[0] <= nxt]
        carried = ""
        if len(w) >= 2:
            carried = f"eth0 {(w[-1][1] - w[0][1]) / 1e6:.1f} MB, rail1 {(w[-1][2] - w[0][2]) / 1e6:.1f} MB"
        rail1 = None
        if name == "rail1_up":
            base = next((x[2] for x in links if x[0] >= t), None)
            hit = next((x[0] for x in links if x[0] >= t and base is not None and x[2] - base > 262144), None)
            if hit is not None and hit - t <= settle:
                rail1 = hit - t
        rows.setdefault(name, []).append((stall, resume, rail1))
        print(f"  {name:10} stall_ms={fmt(stall)} resume_ms={fmt(resume)} rail1_ms={fmt(rail1)} carried: {carried}")
if rows:
    print("medians over runs (ms):")
    for name, v in rows.items():
        col = lambda i: med([x[i] for x in v if x[i] is not None])
        n = lambda i: sum(x[i] is not None for x in v)
        print(f"  {name:10} stall={fmt(col(0))} resume={fmt(col(1))} rail1_data_again={fmt(col(2))} ({n(2)}/{len(v)} runs)")
tp = {}
for d in sorted(glob.glob(f"{tmp}/tput*")):
    rails = d.rsplit("-", 1)[1]
    for l in open(f"{d}/out"):
        m = re.search(r"link_load: total .* goodput_MBps=([0-9.]+)", l)
        if m:
            tp.setdefault(rails, []).append(float(m.group(1)))
for rails, v in tp.items():
    print(f"throughput RAMP_RAILS={rails.replace('+', ',')}: goodput MB/s runs {v} median {med(v):.2f}")
EOF
