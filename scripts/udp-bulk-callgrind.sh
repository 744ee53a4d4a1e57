#!/bin/bash
# Instructions per byte of c-tests/legacy/testbulk over UDP with the packet MAC
# (ramp's default), under callgrind: each rank's instructions outside
# testbulk's own code (ramp and libc: the copies, GHASH, the polls), its memcpy
# alone (1.0 per byte: each byte copied once at each end) and its GHASH, per
# byte it sent and received. Userspace only (the kernel's copies are not
# counted); a rank's polls while it waits depend on timing, its copies do not.
#
# usage: scripts/udp-bulk-callgrind.sh LIBDIR [ITERS] [MSGSIZE] [P|B] [F|H]
#   LIBDIR: a directory holding the libramp.so to measure (target/release, or
#   an older build's copy: run both, alternated, for a before/after)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib=$(realpath "${1:?usage: $0 LIBDIR [ITERS] [MSGSIZE] [P|B] [F|H]}")
iters=${2:-300} size=${3:-65000} mode=${4:-P} duplex=${5:-F}
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=gnu11 -O2 -DAMUDP -DAMX_NDEBUG -I"$root/include" -o "$tmp/testbulk" \
    "$root/c-tests/legacy/testbulk.c" "$root/c-tests/legacy/apputils.c" \
    -L"$lib" -lramp -Wl,-rpath,"$lib" -lm
(cd "$tmp" && RAMP_TRANSPORT=udp valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$tmp/cg.%p" ./testbulk 2 L "$iters" "$size" "$mode" "$duplex" \
    >"$tmp/out" 2>"$tmp/err")
grep procs= "$tmp/out"
# bytes each rank moved: what it sent and what it received
senders=$([ "$duplex" = H ] && echo 1 || echo 2)
bytes=$((iters * size * senders))
for f in "$tmp"/cg.*; do
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
    [ "$total" -lt 10000000 ] && continue # the launcher
    callgrind_annotate --inclusive=no "$f" 2>/dev/null >"$f.self"
    sum() { grep -E "$1" "$f.self" | sed 's/,//g' | awk '{ s += $1 } END { print s + 0 }'; }
    app=$(sum "/testbulk\]")
    mc=$(sum "__mem(cpy|move)_avx_unaligned_erms")
    gh=$(sum "ghash")
    awk -v t="$total" -v a="$app" -v m="$mc" -v g="$gh" -v b="$bytes" -v r="$(basename "$f")" 'BEGIN {
        printf "%s: %.3f Ir/byte outside testbulk, memcpy %.3f, GHASH %.3f (total %d Ir, %d bytes)\n",
            r, (t - a) / b, m / b, g / b, t, b }'
done
