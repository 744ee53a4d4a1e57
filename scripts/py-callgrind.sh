#!/bin/bash
# Instructions per short round trip of the Python package (scripts/py-roundtrip.py:
# one process, a client and a server endpoint, ping.py's round trip), by callgrind:
# the difference between ITERS=2000 and ITERS=4000 runs, divided by 2000; the whole
# process, and apart the share of the interpreter and ctypes (everything outside
# libramp.so and the kernel's vDSO).
#
# Deterministic as scripts/am-cost-callgrind.sh: the monotonic clock is replaced
# (LD_PRELOAD of scripts/vclock.c, built here) by a counter that moves 200 ns per read,
# and Python's string hashes are fixed (PYTHONHASHSEED=0 unless set: with a random
# seed the dicts' layouts move the count by a few hundred instructions a round trip).
#
# usage: scripts/py-callgrind.sh [MODE...]   (default: wait plain raw raw-plain; see
#                                             scripts/py-roundtrip.py)
#   PYTHON=/usr/bin/python3 for another interpreter (default: python3 on PATH)
#   PYDIR=DIR for the ramp package in DIR (default: this tree's python/)
#   OUT=DIR for the profiles (default: target/py-callgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-target/py-callgrind}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the interpreter itself, not a wrapper (pyenv's shim is a script: callgrind would
# profile the shell)
py=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
modes=${*:-wait plain raw raw-plain}
[ -e target/release/libramp.so ] || { echo "py-callgrind: run cargo build --release first" >&2; exit 2; }
export RAMP_LIB=${RAMP_LIB:-$PWD/target/release/libramp.so}
if [ -n "${PYDIR:-}" ]; then
    export PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}"
    export PY_ROUNDTRIP_NO_TREE=1
fi
# the clock a counter (scripts/vclock.c)
cc -O2 -shared -fPIC -o "$out/vclock.so" scripts/vclock.c -ldl
export RAMP_AUTH=${RAMP_AUTH:-off}
export PYTHONHASHSEED=${PYTHONHASHSEED:-0}
export RAMP_CLOCK=system
# total instructions, and those outside libramp (the interpreter, ctypes, libffi, libc)
count() {
    callgrind_annotate --inclusive=no --threshold=100 "$1" 2>/dev/null | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
        /libramp\.so/ { gsub(",", "", $1); lib += $1 }
        END { print total, total - lib }'
}
for m in $modes; do
    for n in 2000 4000; do
        LD_PRELOAD="$out/vclock.so" \
            valgrind --tool=callgrind --callgrind-out-file="$out/$m-$n.out" \
            "$py" scripts/py-roundtrip.py "$m" "$n" >/dev/null 2>&1 ||
            { echo "py-callgrind: $m $n failed" >&2; exit 1; }
    done
    read -r a ap < <(count "$out/$m-2000.out")
    read -r b bp < <(count "$out/$m-4000.out")
    echo "$m: $(((b - a) / 2000)) instructions per round trip, $(((bp - ap) / 2000)) outside libramp ($py; profiles in $out/$m-*.out)"
done
