#!/usr/bin/env bash
# Needless vs needed retransmissions over the ramp-run N=8 lossless legacy runs.
# Runs c-tests/legacy/run.sh --sizes 8 --launchers ramp-run --no-loss --no-negative
# (RAMP_TRANSPORT from the environment) unless --no-run, then reads every log's
# global statistics: packets sent, retransmitted, and duplicates dropped at the
# receivers (a retransmitted copy of a packet the receiver already had: needless).
# needed = retransmitted - duplicates (network duplicates aside: none without faults).
# Usage: bash scripts/retx-split.sh [--no-run]
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
if [ "${1:-}" != "--no-run" ]; then
  bash c-tests/legacy/run.sh --sizes 8 --launchers ramp-run --no-loss --no-negative > /tmp/retx-split.$$.out 2>&1
  tail -1 /tmp/retx-split.$$.out
  grep FAIL /tmp/retx-split.$$.out
  rm -f /tmp/retx-split.$$.out
fi
for f in c-tests/legacy/build/logs/*.ramp-run.8.log; do
  p=$(basename "$f" .ramp-run.8.log)
  sent=$(grep -h "packets sent:" "$f" | tail -1 | sed -E 's/.*packets sent: ([0-9]+) .*/\1/')
  retx=$(grep -h "packets sent:" "$f" | tail -1 | sed -E 's/.*retransmitted: ([0-9]+).*/\1/')
  dup=$(grep -h "dropped: duplicates" "$f" | tail -1 | sed -E 's/.*duplicates ([0-9]+).*/\1/')
  echo "$p ${sent:-0} ${retx:-0} ${dup:-0}"
done | awk '{ s+=$2; r+=$3; d+=$4;
  printf "%-14s sent %8d retx %6d (%.2f%%) needless %6d (%.2f%%) needed %5d\n", $1, $2, $3, ($2?100*$3/$2:0), $4, ($2?100*$4/$2:0), $3-$4 }
  END { printf "TOTAL sent %d retx %d = %.2f%%  needless(dup) %d = %.2f%%  needed %d = %.2f%%\n", s, r, 100*r/s, d, 100*d/s, r-d, 100*(r-d)/s }'
