#!/usr/bin/env bash
# Build and run ramp's C tests against libramp.so, the way a user's program would be
# built: only the public headers in include/ and -lramp.
#
# Usage: bash c-tests/run.sh [--lib-dir DIR] [--only NAME[,NAME...]] [--no-fault] [--seed N]
#   --lib-dir DIR  directory holding libramp.so (default: target/release)
#   --only         run only these tests (names with or without the t_ prefix)
#   --no-fault     skip the fault-injection pass
#   --seed N       RAMP_FAULT_SEED base for the fault pass (default 4242)
#   --transports L comma-separated RAMP_TRANSPORT values the tests run over
#                  (default shm,udp: every test once over shared memory, once over UDP)
#
# Every c-tests/t_*.c is compiled and run (timeout 600 s each: a watchdog above every test's own alarm) over each transport; then the tests that are
# meaningful under loss run again with RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.02
# RAMP_FAULT_REORDER=0.05 RAMP_FAULT_SEED=<n>; t_rma also runs with RAMP_PROGRESS_THREAD=1
# and with T_RMA_ALLOC=1 (its target's regions from ramp_AllocRegion); t_exchange also
# with T_EXCHANGE_ALLOCSEG=1 (both segments from ramp_AllocSegment).
# c-tests/header_compile.c, if present,
# is compiled only. Logs: c-tests/build/<name>.log. Exit status non-zero on any failure.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

LIB_DIR="target/release"
ONLY=""
FAULT=1
SEED=4242
TRANSPORTS="shm,udp"
while [ $# -gt 0 ]; do
  case "$1" in
    --lib-dir) LIB_DIR="${2:?--lib-dir needs a directory}"; shift 2 ;;
    --lib-dir=*) LIB_DIR="${1#--lib-dir=}"; shift ;;
    --only) ONLY="${2:?--only needs a name}"; shift 2 ;;
    --only=*) ONLY="${1#--only=}"; shift ;;
    --no-fault) FAULT=0; shift ;;
    --seed) SEED="${2:?--seed needs a number}"; shift 2 ;;
    --transports) TRANSPORTS="${2:?--transports needs a list}"; shift 2 ;;
    --transports=*) TRANSPORTS="${1#--transports=}"; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

LIB_DIR="$(cd "$LIB_DIR" 2>/dev/null && pwd)" || { echo "run.sh: no such directory: $LIB_DIR" >&2; exit 2; }
if [ ! -e "$LIB_DIR/libramp.so" ]; then
  echo "run.sh: $LIB_DIR/libramp.so not found (run cargo build --release first)" >&2
  exit 2
fi
# the soname is libramp.so.0: make sure the runtime linker finds it
if [ ! -e "$LIB_DIR/libramp.so.0" ]; then
  ln -sf libramp.so "$LIB_DIR/libramp.so.0" || { echo "run.sh: cannot create $LIB_DIR/libramp.so.0" >&2; exit 2; }
fi

CC="${CC:-cc}"
BUILD="c-tests/build"
mkdir -p "$BUILD"

# Tests meaningful under packet loss, duplication and reordering.
FAULT_TESTS="t_exchange t_flood t_par t_waitsema t_many t_segbound t_barrier t_rma t_names t_drain t_drain_try t_txn"
FAULT_ENV="RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.02 RAMP_FAULT_REORDER=0.05"

PASSED=0
FAILED=0
FAILED_NAMES=""

selected() {
  [ -z "$ONLY" ] && return 0
  local n
  for n in ${ONLY//,/ }; do
    [ "$n" = "$1" ] || [ "t_$n" = "$1" ] && return 0
  done
  return 1
}

report() { # report STATUS NAME SECONDS LOG
  printf '%s %-30s %6.2fs\n' "$1" "$2" "$3"
  if [ "$1" = FAIL ]; then
    FAILED=$((FAILED + 1))
    FAILED_NAMES="$FAILED_NAMES $2"
    if [ -s "$4" ]; then
      tail -n 40 "$4" | sed 's/^/    | /'
    fi
  else
    PASSED=$((PASSED + 1))
  fi
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# ---- header_compile.c (compile only) ----------------------------------------------
if [ -f c-tests/header_compile.c ] && selected header_compile; then
  t0=$(now)
  log="$BUILD/header_compile.log"
  if $CC -std=c11 -Wall -Wextra -Werror -g -Iinclude -c c-tests/header_compile.c \
        -o "$BUILD/header_compile.o" >"$log" 2>&1; then
    report PASS header_compile "$(elapsed "$t0" "$(now)")" "$log"
  else
    report FAIL header_compile "$(elapsed "$t0" "$(now)")" "$log"
  fi
fi

# ---- compile -----------------------------------------------------------------------
BUILT=""
for src in c-tests/t_*.c; do
  [ -e "$src" ] || continue
  name="$(basename "$src" .c)"
  selected "$name" || continue
  log="$BUILD/$name.build.log"
  t0=$(now)
  if $CC -std=c11 -Wall -Wextra -Werror -g -Iinclude -o "$BUILD/$name" "$src" c-tests/common.c \
        -L"$LIB_DIR" -lramp -Wl,-rpath,"$LIB_DIR" -pthread >"$log" 2>&1; then
    BUILT="$BUILT $name"
  else
    report FAIL "$name(build)" "$(elapsed "$t0" "$(now)")" "$log"
  fi
done

# ---- run -----------------------------------------------------------------------------
run_one() { # run_one LABEL NAME [ENV...]
  local label="$1" name="$2"
  shift 2
  local log="$BUILD/${label//[^A-Za-z0-9_.-]/_}.log"
  local t0 rc
  t0=$(now)
  env "$@" timeout -k 5 600 "$BUILD/$name" >"$log" 2>&1
  rc=$?
  local secs
  secs="$(elapsed "$t0" "$(now)")"
  if [ $rc -eq 0 ]; then
    report PASS "$label" "$secs" "$log"
  else
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      echo "run.sh: $label killed by timeout 600 s (exit $rc)" >>"$log"
    else
      echo "run.sh: $label exited with status $rc" >>"$log"
    fi
    report FAIL "$label" "$secs" "$log"
  fi
}

for transport in ${TRANSPORTS//,/ }; do
  for name in $BUILT; do
    run_one "$name[$transport]" "$name" RAMP_TRANSPORT="$transport"
  done
  # Remote memory again with every bundle's progress thread on (RAMP_PROGRESS_THREAD=1):
  # handlers must still run only in the program's own calls.
  case " $BUILT " in *" t_rma "*) run_one "t_rma[$transport,progress-thread]" t_rma RAMP_PROGRESS_THREAD=1 RAMP_TRANSPORT="$transport" ;; esac
  # And with the target's regions allocated by ramp (ramp_AllocRegion): over shm the
  # initiator maps them and copies itself.
  case " $BUILT " in *" t_rma "*) run_one "t_rma[$transport,alloc]" t_rma T_RMA_ALLOC=1 RAMP_TRANSPORT="$transport" ;; esac
  # And with the segment allocated by ramp (ramp_AllocSegment): over shm the big long
  # requests are one memcpy by the sender into it.
  case " $BUILT " in *" t_exchange "*) run_one "t_exchange[$transport,allocseg]" t_exchange T_EXCHANGE_ALLOCSEG=1 RAMP_TRANSPORT="$transport" ;; esac
done

if [ $FAULT -eq 1 ]; then
  i=0
  for name in $FAULT_TESTS; do
    case " $BUILT " in *" $name "*) ;; *) continue ;; esac
    seed=$((SEED + i))
    i=$((i + 1))
    # shellcheck disable=SC2086
    run_one "$name[loss,seed=$seed]" "$name" $FAULT_ENV RAMP_FAULT_SEED=$seed
  done
fi

[ $FAILED -ne 0 ] && echo "failed:$FAILED_NAMES"
echo "C tests: $PASSED passed, $FAILED failed"
[ $FAILED -eq 0 ]
