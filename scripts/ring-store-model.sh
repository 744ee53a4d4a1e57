#!/bin/bash
# The C model of the shared-memory express lane's one-way stream
# (scripts/ring-store-model.c; ARCHITECTURE.md, "What bounds the lane's
# one-way rate"): nanoseconds a message for a sender doing some stack stores
# per message, with or without one locked instruction a message, writing
# each record at once or holding them back to write 8 at a time
# (TxRing::hold). Each line the median of RUNS runs (default 3).
#
# usage: scripts/ring-store-model.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS]" >&2; exit 2; }
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
cc -O2 -o "$bin" scripts/ring-store-model.c -lpthread
for stores in 20 120; do
    for locked in 0 1; do
        for burst in 1 8; do
            for _ in $(seq "$runs"); do "$bin" "$stores" "$locked" "$burst"; done |
                sort -t: -k2 -n | sed -n "$(((runs + 1) / 2))p"
        done
    done
done
