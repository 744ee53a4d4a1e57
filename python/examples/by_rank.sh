#!/usr/bin/env bash
# by_rank.sh -- run different programs on different ranks of one ramp-run job.
#
#   ramp-run -n N by_rank.sh RANK0_PROGRAM [ARGS...] -- OTHER_PROGRAM [ARGS...]
#
# ramp-run starts N copies of one program; this script is that program.  It reads
# the rank ramp-run gives every worker (RAMP_SPMD_RANK) and execs RANK0_PROGRAM on
# rank 0 and OTHER_PROGRAM on every other rank, so that, for example, a C server
# and Python clients form one job (each calls ramp_SPMDStartup / ramp.spmd.startup):
#
#   ramp-run -n 2 python/examples/by_rank.sh ./ping_c -- python3 python/examples/ping.py
#
# exec keeps the process ramp-run started, so the job sees no extra process.
set -u
if [ -z "${RAMP_SPMD_RANK:-}" ]; then
  echo "by_rank.sh: RAMP_SPMD_RANK is not set: start me with ramp-run -n N $0 ..." >&2
  exit 2
fi
first=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  first+=("$1")
  shift
done
if [ $# -eq 0 ] || [ ${#first[@]} -eq 0 ]; then
  echo "usage: ramp-run -n N $0 RANK0_PROGRAM [ARGS...] -- OTHER_PROGRAM [ARGS...]" >&2
  exit 2
fi
shift # the --
if [ $# -eq 0 ]; then
  echo "by_rank.sh: no program after --" >&2
  exit 2
fi
if [ "$RAMP_SPMD_RANK" = "0" ]; then
  exec "${first[@]}"
else
  exec "$@"
fi
