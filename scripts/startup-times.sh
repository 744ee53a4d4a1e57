#!/usr/bin/env bash
# Job start-up (and end) time per launcher: the wall time of one whole job of the legacy
# port testreduce (start-up, one AM per rank to rank 0, a barrier, SPMDExit), the same
# binary under every launcher, median of 3 runs, for each size.  Measures only, asserts
# nothing; launchers that cannot run here are shown as "-".  Not part of test-all.
#
# Usage: bash scripts/startup-times.sh [SIZES]      (default "4 16")
# Needs target/release/libramp.so (cargo build --release); builds
# c-tests/legacy/build/testreduce when it is missing.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
SIZES="${1:-4 16}"
PROG=c-tests/legacy/build/testreduce
MPIRUN=/usr/bin/mpirun.openmpi
if [ ! -x "$PROG" ]; then
  mkdir -p c-tests/legacy/build
  [ -e target/release/libramp.so.0 ] || ln -sf libramp.so target/release/libramp.so.0
  cc -std=gnu11 -O2 -DAMUDP -DAMX_NDEBUG -Iinclude -o "$PROG" c-tests/legacy/testreduce.c \
    c-tests/legacy/apputils.c -Ltarget/release -lramp -Wl,-rpath,"$PWD/target/release" -lm || exit 2
fi

have() {
  case "$1" in
    ramp-run) [ -x target/release/ramp-run ] ;;
    master) true ;;
    mpiexec) command -v mpiexec >/dev/null 2>&1 ;;
    srun-*) bash scripts/slurm.sh check >/dev/null 2>&1 ;;
    mpirun) [ -x "$MPIRUN" ] ;;
  esac
}
cmd() { # cmd LAUNCHER N
  case "$1" in
    ramp-run) echo "target/release/ramp-run -n $2 $PROG" ;;
    master) echo "$PROG $2 L" ;;
    mpiexec) echo "mpiexec -n $2 $PROG" ;;
    srun-pmi2) echo "srun -O -K --mpi=pmi2 -n $2 $PROG" ;;
    srun-pmix) echo "srun -O -K --mpi=pmix -n $2 $PROG" ;;
    mpirun) echo "$MPIRUN --allow-run-as-root --oversubscribe -n $2 $PROG" ;;
  esac
}
now() { date +%s.%N; }

printf '| launcher |'; for n in $SIZES; do printf ' n=%s |' "$n"; done; echo
printf '|---|'; for _ in $SIZES; do printf -- '---|'; done; echo
for l in ramp-run master mpiexec srun-pmi2 srun-pmix mpirun; do
  printf '| %s |' "$l"
  for n in $SIZES; do
    if ! have "$l"; then printf ' - |'; continue; fi
    ts=()
    for _ in 1 2 3; do
      t0=$(now)
      # shellcheck disable=SC2046
      timeout -k 5 60 $(cmd "$l" "$n") >/dev/null 2>&1
      rc=$?
      t1=$(now)
      if [ $rc -ne 0 ]; then ts=(); break; fi
      ts+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
    done
    if [ ${#ts[@]} -eq 3 ]; then
      printf ' %s s |' "$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p)"
    else
      printf ' failed (exit %s) |' "$rc"
    fi
  done
  echo
done
echo
echo "(wall time of one job of $PROG: start-up + a reduction + SPMDExit; median of 3; $(nproc) CPUs)"
