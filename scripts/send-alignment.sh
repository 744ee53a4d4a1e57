#!/bin/bash
# How fast a sender pushes 65,507-byte UDP datagrams on loopback by the
# alignment of the payload it gathers, relative to where that payload lands
# in the datagram: a C blast (sender pinned to CPU 0, each datagram gathered
# from a header piece of HEADER bytes, the payload from page + SRC, a 4-byte
# trailer, as ramp sends a long fragment; receiver pinned to CPU 1, recvmmsg
# of 16 into page-aligned slots; window 64). The sender's kernel copy
# (_copy_from_iter) is the largest cost of a UDP Xfer's sending end (37% of
# its time in a perf profile of GASNet's testbulk over ramp, 65,000 bytes).
#
# On this project's Zen 4 (stop 23), fast when (SRC - HEADER) mod 32 == 0,
# in the host's fast state: header 64, 96 or 128 with the payload on a line
# ~5.3 GB/s, header 72 (an Xfer of 1 argument: 68 + 4) with the payload at
# line + 8 ~5.26, header 68, 72, 76 or 80 with the payload on a line
# 4.8-5.0; in its slow state (medians of 4 alternated rounds): 64:0 1,801,
# 72:8 1,806, 96:0 1,809 against 72:0 1,680 and 72:16 1,553 MiB/s. ramp's
# kept payload buffers come from malloc (16-byte aligned, any line offset),
# so a long fragment is sent at either speed, by chance of its buffer.
#
# usage: scripts/send-alignment.sh [DATAGRAMS] [HEADER:SRC...]
set -euo pipefail
n=${1:-20000}
shift || true
cases=${*:-64:0 72:0 72:8 72:16 96:0 128:0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CC:-cc}" -O2 -o "$tmp/blast" "$(dirname "$0")/alignment-blast.c"
for hc in $cases; do "$tmp/blast" "$n" 0 "${hc%%:*}" "${hc##*:}"; done
