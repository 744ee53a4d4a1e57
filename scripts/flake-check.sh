#!/usr/bin/env bash
# Runs the Rust unit and integration tests N times under load and prints the
# failures per test: a test that needs a quiet machine is a benchmark, not a test.
#
# Usage: bash scripts/flake-check.sh [N] [-- extra cargo test arguments]
#
# Two busy loops, one pinned to each of cores 0 and 1 (taskset), run for the
# whole check, so that every test meets a machine whose cores are taken, as CI
# sometimes is. Each run is `cargo test --release --no-fail-fast` (the tests
# were built once before the first run); its log stays in
# target/flake-check/run-K.log. At the end: one line per test that failed at
# least once ("FAILED k/N  name"), then "flake-check: F failures in N runs"
# (F = 0 is the only pass; the exit status is 1 otherwise).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

N=20
if [ $# -gt 0 ] && [ "$1" != "--" ]; then N="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
case "$N" in '' | *[!0-9]*) echo "flake-check: N must be a number, not '$N'" >&2; exit 2 ;; esac

OUT="$ROOT/target/flake-check"
mkdir -p "$OUT" || exit 2
rm -f "$OUT"/run-*.log

echo "flake-check: building the tests"
cargo test --release --no-run "$@" >"$OUT/build.log" 2>&1 || {
  tail -n 30 "$OUT/build.log"
  echo "flake-check: the build failed" >&2
  exit 2
}

LOADS=()
cleanup() { for p in "${LOADS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT INT TERM
ncpu="$(nproc)"
for core in 0 1; do
  [ "$core" -lt "$ncpu" ] || continue
  taskset -c "$core" bash -c 'while :; do :; done' &
  LOADS+=($!)
done
echo "flake-check: ${#LOADS[@]} busy loop(s) pinned to cores 0 and 1"

for k in $(seq 1 "$N"); do
  t0=$SECONDS
  cargo test --release --no-fail-fast "$@" >"$OUT/run-$k.log" 2>&1
  rc=$?
  f="$(grep -cE '^test .* \.\.\. FAILED$' "$OUT/run-$k.log")"
  echo "flake-check: run $k/$N: exit $rc, $f failed test(s), $((SECONDS - t0)) s"
done

echo
echo "==================== flake-check: failures per test ===================="
total=0
while read -r count name; do
  [ -n "$name" ] || continue
  printf '  FAILED %d/%d  %s\n' "$count" "$N" "$name"
  total=$((total + count))
done < <(cat "$OUT"/run-*.log | sed -nE 's/^test (.*) \.\.\. FAILED$/\1/p' | sort | uniq -c | sort -rn)
# a run that ended without a test's verdict (a crash, a hang killed) counts too
crashed=0
for k in $(seq 1 "$N"); do
  grep -qE '^error: ([0-9]+ targets? failed|test failed)' "$OUT/run-$k.log" &&
    ! grep -qE '^test .* \.\.\. FAILED$' "$OUT/run-$k.log" && crashed=$((crashed + 1))
done
[ $crashed -gt 0 ] && echo "  $crashed run(s) failed without a failed test named (see target/flake-check/run-K.log)"
total=$((total + crashed))
echo "flake-check: $total failures in $N runs"
[ $total -eq 0 ]
