#!/bin/bash
# How fast the kernel copies 65,507-byte UDP datagrams on loopback into a
# receive buffer, by where the buffer starts relative to a 64-byte cache
# line: a C blast (sender pinned to CPU 0, gathered from 3 pieces like
# ramp's; receiver pinned to CPU 1, recvmmsg of 16 into slots at
# page + OFFSET; window 64). On this project's Zen 3 machines offsets
# 4-28 ran at a third of the speed of 0 and 32-63, which is why
# sys::BatchReceiver's slots start on a page boundary.
#
# usage: scripts/recv-alignment.sh [DATAGRAMS] [OFFSET...]
set -euo pipefail
n=${1:-30000}
shift || true
offsets=${*:-0 4 8 16 24 32 48 60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CC:-cc}" -O2 -o "$tmp/blast" "$(dirname "$0")/alignment-blast.c"
for o in $offsets; do "$tmp/blast" "$n" "$o"; done
