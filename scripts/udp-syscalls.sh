#!/bin/bash
# System calls per round trip of `ramp bench`'s ping-pong phases over UDP
# (raw UDP, ramp 0 args, ramp 4 args), at each end: the bench-server and
# bench-client roles run pinned (cores 1 and 0) under
# `perf record -e raw_syscalls:*` (low overhead: the busy loops keep their
# shape), one round of ITERS round trips (+ the bench's tenth of warm-up).
# Failed receives (EAGAIN) are shown apart: their number only says how
# long each end waited.
#
# usage: scripts/udp-syscalls.sh [RAMP_BINARY] [ITERS]
#   RAMP_AUTH=on RAMP_JOB_KEY=... for the packet MAC (default: RAMP_AUTH=off)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/release/ramp}")
iters=${2:-20000}
command -v perf >/dev/null || { echo "perf is needed" >&2; exit 1; }
export RAMP_AUTH=${RAMP_AUTH:-off} RAMP_TRANSPORT=udp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/in"
taskset -c 1 perf record -q -o "$tmp/server.data" -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -- \
    "$bin" bench-server <"$tmp/in" >"$tmp/srv" 2>/dev/null &
srv=$!
exec 3>"$tmp/in"
until [ -s "$tmp/srv" ]; do sleep 0.05; done
# shellcheck disable=SC2046
taskset -c 0 perf record -q -o "$tmp/client.data" -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -- \
    "$bin" bench-client $(head -1 "$tmp/srv") "$iters" 1 16 >"$tmp/cli" &
cli=$!
until [ -s "$tmp/cli" ]; do sleep 0.05; done
head -1 "$tmp/cli" >&3
wait $cli
exec 3>&-
wait $srv
grep -E '^(raw UDP|ramp short)' "$tmp/cli"
for role in client server; do
    perf script -i "$tmp/$role.data" -F tid,event,trace 2>/dev/null >"$tmp/$role.txt"
    python3 - "$tmp/$role.txt" "$iters" "$role" <<'EOF'
import collections, sys
names = {44: 'sendto', 45: 'recvfrom', 46: 'sendmsg', 47: 'recvmsg', 299: 'recvmmsg',
         307: 'sendmmsg', 228: 'clock_gettime', 202: 'futex', 7: 'poll', 232: 'epoll_wait'}
pend, toks = {}, []
for line in open(sys.argv[1]):
    p = line.split()
    if 'sys_enter' in p[1]:
        pend[p[0]] = int(p[3])
    elif p[0] in pend:
        toks.append((p[0], pend.pop(p[0]), int(p[5])))
main = collections.Counter(t[0] for t in toks).most_common(1)[0][0]
# a round trip ends with each end's send: the calls up to and with it
segs, cur = [], collections.Counter()
for tid, nr, ret in toks:
    if tid != main:
        continue
    name = names.get(nr, 'nr%d' % nr)
    if name.startswith('recv') and ret < 0:
        name += ' (EAGAIN)'
    cur[name] += 1
    if name.startswith('send'):
        segs.append(cur)
        cur = collections.Counter()
n = int(sys.argv[2]) * 11 // 10
for k, phase in enumerate(['raw UDP', 'ramp 0 args', 'ramp 4 args']):
    c = collections.Counter()
    for s in segs[k * n:(k + 1) * n]:
        c.update(s)
    calls = ', '.join('%s %.3f' % (x, v / n) for x, v in sorted(c.items()) if v >= n / 1000)
    print('%s %-11s per round trip: %s' % (sys.argv[3], phase, calls))
EOF
done
