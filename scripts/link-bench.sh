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
# shares (bytes delivered by the end of the sending time), the short
# requests' latency (p50/p99) and its p50 minus the unshaped one, the
# shaped queue's mean backlog as delay (tc -s qdisc, sampled every 100 ms),
# and the issue's targets beside them. A job that does not finish within
# its watchdog is killed and reported as "collapsed" with the rate it
# achieved (from its progress lines).
#
#   scripts/link-bench.sh [--secs S] [--watchdog S] [--bin DIR] [--cases LIST]
#     --secs S       sending time of each job (default 5)
#     --watchdog S   a job still running after S seconds is killed (default S+30)
#     --bin DIR      where ramp-run and examples/link_load are (default:
#                    target/release, built first with cargo build --release)
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
BIN=""
CASES="base,r100,r200,r400,incast,twojobs,loss"
REPORT=""

die() { echo "link-bench: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --secs) [[ "${2:-}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--secs: a number"; SECS=$2; shift 2 ;;
        --watchdog) [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--watchdog: whole seconds"; WATCHDOG=$2; shift 2 ;;
        --bin) [[ -d "${2:-}" ]] || die "--bin: not a directory: ${2:-}"; BIN=$(cd "$2" && pwd); shift 2 ;;
        --cases) CASES=${2:-}; shift 2 ;;
        --report) [[ -d "${2:-}" ]] || die "--report: not a directory: ${2:-}"; REPORT=$2; shift 2 ;;
        -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
python3 - "$1" "$CASES" <<'EOF'
import json, os, re, sys
tmp, cases = sys.argv[1], sys.argv[2].split(",")
secs, load = open(os.path.join(tmp, "meta")).read().split(" ", 1)
RATE = {"base": None, "r100": 100e6, "r200": 200e6, "r400": 400e6,
        "incast": 200e6, "twojobs": 200e6, "loss": 200e6}

def kv(line):
    return dict(re.findall(r"(\w+)=([^\s]+)", line))

def job(name):
    out = open(os.path.join(tmp, name + ".out")).read().splitlines()
    rc = int(open(os.path.join(tmp, name + ".rc")).read())
    senders = [kv(l) for l in out if l.startswith("link_load: sender ")]
    total = next((kv(l) for l in out if l.startswith("link_load: total ")), None)
    verdict = next((l for l in out if l.startswith("link_load: PASS") or l.startswith("link_load: FAIL")), None)
    prog = [kv(l) for l in out if l.startswith("link_load: progress ")]
    # per rank, its last progress line (what a killed job's senders had sent)
    rprog = {}
    for l in out:
        m = re.match(r"link_load: rank (\d+) progress", l)
        if m:
            rprog[m.group(1)] = kv(l)
    j = {"rc": rc, "finished": total is not None, "pass": verdict is not None and "PASS" in verdict,
         "verdict": verdict}
    # the whole run, by its progress lines (a failed run's figures count its dead time)
    last = prog[-1] if prog else {"t": "0", "delivered": "0"}
    j["t_all"] = float(last["t"])
    j["rate_all"] = float(last["delivered"]) / j["t_all"] if j["t_all"] > 0 else 0.0
    if total:
        j["goodput"] = float(total["goodput_MBps"]) * 1e6
        j["jain"] = float(total["jain"])
        j["shares"] = [float(s["bytes_by_deadline"]) for s in senders]
        wire = sum(float(s["wire_bytes"]) for s in senders)
        j["retx"] = sum(float(s["retx_share"]) * float(s["wire_bytes"]) for s in senders) / max(wire, 1)
        j["p50"] = max(float(s["short_p50_us"]) for s in senders) / 1e3
        j["p99"] = max(float(s["short_p99_us"]) for s in senders) / 1e3
    else:
        last = prog[-1] if prog else {"t": "0", "delivered": "0", "per_sender": ""}
        t = float(last["t"])
        j["goodput"] = float(last["delivered"]) / t if t > 0 else 0.0
        j["shares"] = [float(x) for x in last["per_sender"].split(",") if x]
        sq = sum(x * x for x in j["shares"])
        j["jain"] = sum(j["shares"]) ** 2 / (len(j["shares"]) * sq) if sq else 0.0
        wire = sum(float(p["wire_bytes"]) for p in rprog.values())
        j["retx"] = sum(float(p["beyond_first"]) for p in rprog.values()) / wire if wire else 0.0
        j["p50"] = j["p99"] = None
        j["t"] = t
    return j

def qdisc(c):
    backlog, drops = [], 0
    try:
        for l in open(os.path.join(tmp, c + ".qdisc")):
            l = l.strip()
            if not l:
                continue
            for q in json.loads(l):
                if q.get("kind") == "tbf":
                    backlog.append(q.get("backlog", 0))
                    drops = max(drops, q.get("drops", 0))
    except (OSError, ValueError):
        pass
    return backlog, drops

def f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)

rows, base_p50 = [], None
hdr = ["case", "rate", "goodput MB/s", "good/rate (target)", "retx share (target)",
       "Jain (target)", "short p50/p99 ms", "+delay p50 ms", "tc backlog ms mean/max", "tc drops", "result"]
for c in cases:
    rate = RATE[c]
    names = sorted(n[:-4] for n in os.listdir(tmp) if n.startswith(c + ".") and n.endswith(".out"))
    jobs = [job(n) for n in names]
    if not jobs:
        continue
    backlog, drops = qdisc(c)
    bl = "-"
    if rate and backlog:
        ms = [b * 8 / rate * 1e3 for b in backlog]
        bl = "{:.1f}/{:.1f}".format(sum(ms) / len(ms), max(ms))
    for j in jobs:
        if j["finished"] and not j["pass"]:
            j["goodput"] = j["rate_all"]
    good = sum(j["goodput"] for j in jobs)
    res = []
    for j in jobs:
        if not j["finished"]:
            res.append("collapsed ({:.1f} MB/s at kill, {:.0f} s)".format(j["goodput"] / 1e6, j["t"]))
        elif not j["pass"]:
            v = j["verdict"] or "exit %d" % j["rc"]
            back = re.search(r"(\d+) messages came back", v)
            lost = re.search(r"lost (\d+), run twice (\d+)", v)
            if back:
                # the sender gave its peer up (silence past RAMP_PEER_TIMEOUT_MS)
                extra = ""
                if lost and (lost.group(1) != back.group(1) or lost.group(2) != "0"):
                    extra = ", %s never delivered, %s twice" % lost.groups()
                res.append("collapsed: peer given up, {} messages returned{} ({:.1f} MB/s over {:.0f} s)".format(
                    back.group(1), extra, j["rate_all"] / 1e6, j["t_all"]))
            else:
                res.append("FAIL: " + v[len("link_load: FAIL "):][:100])
        else:
            res.append("ok")
    result = "; ".join(res)
    ratio = good * 8 / rate if rate else None
    if c == "base":
        base_p50 = jobs[0]["p50"]
    target_good = {"r100": ">=0.9", "r200": ">=0.9", "r400": ">=0.9", "incast": ">=0.9 sum",
                   "twojobs": ">=0.4 each", "loss": ">=0.7"}.get(c, "")
    if c == "twojobs":
        each = [j["goodput"] * 8 / rate for j in jobs]
        gr = "/".join("{:.2f}".format(e) for e in each) + " (" + target_good + ")"
        shares = [j["goodput"] for j in jobs]
        sq = sum(x * x for x in shares)
        jain = sum(shares) ** 2 / (len(shares) * sq) if sq else 0.0
        jt = "{:.3f} (>=0.9)".format(jain)
    else:
        gr = "-" if ratio is None else "{:.3f} ({})".format(ratio, target_good)
        jt = "{:.3f} (>=0.9)".format(jobs[0]["jain"]) if c == "incast" else "-"
    retx = max(j["retx"] for j in jobs)
    rt = "{:.4f}{}".format(retx, " (<=0.02)" if c in ("r100", "r200", "r400") else "")
    p50 = [j["p50"] for j in jobs if j["p50"] is not None]
    p99 = [j["p99"] for j in jobs if j["p99"] is not None]
    lat = "{:.1f}/{:.1f}".format(max(p50), max(p99)) if p50 else "-"
    delay = "{:.1f}".format(max(p50) - base_p50) if p50 and base_p50 is not None and c != "base" else "-"
    rows.append([c, "-" if not rate else "%d Mbit/s" % (rate / 1e6), "{:.2f}".format(good / 1e6),
                 gr, rt, jt, lat, delay, bl, str(drops) if rate else "-", result])

print("# link-bench: %s s of sending per job; load average at the start and the end: %s" % (secs, load.strip()))
w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
for r in [hdr] + rows:
    print("| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(r)) + " |")
EOF
}

if [[ -n "$REPORT" ]]; then
    table "$REPORT"
    exit
fi

if [[ -z "$BIN" ]]; then
    log "cargo build --release --bin ramp-run --example link_load"
    (cd "$ROOT" && cargo build --release --bin ramp-run --example link_load) >&2 || die "build failed"
    BIN="$ROOT/target/release"
fi
RUN="$BIN/ramp-run"
LOAD="$BIN/examples/link_load"
[[ -x "$RUN" && -x "$LOAD" ]] || die "$RUN or $LOAD is missing"
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

# start_job NAME MAP [VAR=VALUE...]: a job of the ranks in MAP, in the background
start_job() {
    local name=$1 map=$2
    shift 2
    local n
    n=$(echo "$map" | tr ',' '\n' | wc -l)
    local xs=(-x RAMP_TRANSPORT=udp -x RAMP_INTERFACE=eth0)
    local v
    for v in "$@"; do xs+=(-x "$v"); done
    timeout -k 5 "$WATCHDOG" "$RUN" -n "$n" --master-ip "$MASTER_IP" \
        --wrap "bash $ROOT/scripts/netns.sh -p rlb pick $map {rank}" "${xs[@]}" "$LOAD" --secs "$SECS" \
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

# run_case CASE RATE MAP... : shapes (RATE or off), runs one job per MAP, waits
run_case() {
    local c=$1 rate=$2
    shift 2
    log "case $c: rate $rate; $# job(s): $*"
    "${NETNS[@]}" shape 0 "$rate" >/dev/null || die "shape failed"
    sample rlbv0
    local i=0 names=() m
    for m in "$@"; do
        local env=()
        [[ $c == loss ]] && env=(RAMP_FAULT_LOSS=0.01)
        start_job "$c.$i" "$m" "${env[@]}"
        names+=("$c.$i")
        i=$((i + 1))
    done
    wait_jobs "${names[@]}"
    stop_sampler
    cp "$TMP/qdisc.samples" "$TMP/$c.qdisc"
    # the namespaces stay; what a killed job left inside goes
    local ns
    for ns in rlb0 rlb1 rlb2 rlb3 rlb4; do
        local pids
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [[ -n "$pids" ]] && kill -9 $pids 2>/dev/null
    done
    "${NETNS[@]}" shape 0 off >/dev/null
}

T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for c in ${CASES//,/ }; do
    case $c in
        base) run_case base off 0,1 ;;
        r100) run_case r100 100mbit 0,1 ;;
        r200) run_case r200 200mbit 0,1 ;;
        r400) run_case r400 400mbit 0,1 ;;
        incast) run_case incast 200mbit 0,1,2,3,4 ;;
        twojobs) run_case twojobs 200mbit 0,1 0,2 ;;
        loss) run_case loss 200mbit 0,1 ;;
    esac
done
log "all cases in $(($(date +%s) - T0)) s; load: $(cut -d' ' -f1-3 /proc/loadavg); the jobs' output is in $TMP"

echo "$SECS $LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)" >"$TMP/meta"
table "$TMP"
