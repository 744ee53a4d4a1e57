#!/bin/bash
# Instructions per short round trip (benches/am_cost: request + reply, both
# ends, one thread), over shared memory and over UDP, by callgrind: the
# difference between ITERS=2000 and ITERS=4000 runs, divided by 2000.
#
# Deterministic: the monotonic clock is replaced (LD_PRELOAD of scripts/vclock.c,
# built here) by a counter that moves 200 ns per read, so what depends on
# time (a request's poll when the last one is 20 us old, the UDP fallback's
# gap beside a ring, timers) happens the same way in every run, however
# slowly valgrind runs on a loaded machine.
#
# usage: scripts/am-cost-callgrind.sh [OUTDIR]
#   RAMP_AUTH=on RAMP_JOB_KEY=... for the packet MAC (default: RAMP_AUTH=off)
#   EMPTY_POLLS=k: k empty polls per round trip as well
#   BUNDLE=1: every poll of the bundle (AM_Poll), not of each endpoint
#   CODEGEN_UNITS=n: build with n codegen units into target/cgun (the
#   release profile builds one, Cargo.toml: 16-unit builds swing 90-170
#   instructions a round trip with what gets inlined, and cost ~250 more;
#   1-unit builds are stable from commit to commit)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/am-cost-callgrind}
mkdir -p "$out"
out=$(cd "$out" && pwd)
target=target
if [ -n "${CODEGEN_UNITS:-}" ]; then
    case $CODEGEN_UNITS in
    '' | *[!0-9]* | 0*) echo "CODEGEN_UNITS must be a positive integer, not '$CODEGEN_UNITS'" >&2; exit 2 ;;
    esac
    export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=$CODEGEN_UNITS
    target=target/cgu$CODEGEN_UNITS
fi
CARGO_TARGET_DIR=$target cargo bench --bench am_cost --no-run -j 2 >/dev/null 2>&1
bin=$(ls -t "$target"/release/deps/am_cost-* | grep -v '\.d$' | head -1)
# the clock a counter (scripts/vclock.c)
cc -O2 -shared -fPIC -o "$out/vclock.so" scripts/vclock.c -ldl
export RAMP_AUTH=${RAMP_AUTH:-off}
# every clock reading through the shim (not carried forward by the TSC)
export RAMP_CLOCK=system
for t in shm udp; do
    for n in 2000 4000; do
        # (RAW=0: without the benchmark's raw UDP loop beside it, ~250
        # instructions a round trip of its own)
        LD_PRELOAD="$out/vclock.so" RAMP_TRANSPORT=$t ITERS=$n RAW=0 \
            valgrind --tool=callgrind --callgrind-out-file="$out/$t-$n.out" "$bin" >/dev/null 2>&1
    done
    a=$(callgrind_annotate "$out/$t-2000.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    b=$(callgrind_annotate "$out/$t-4000.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    echo "$t: $(((b - a) / 2000)) instructions per round trip (RAMP_AUTH=$RAMP_AUTH, codegen units ${CODEGEN_UNITS:-of the release profile}; profiles in $out/$t-*.out)"
done
