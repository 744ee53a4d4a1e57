#!/usr/bin/env bash
# Ports of GASNet's AMX test programs (c-tests/legacy/*.c), built as an AMUDP user builds
# them (only include/amudp.h + amudp_spmd.h, -DAMUDP -DAMX_NDEBUG, -lramp) and run as
# SPMD jobs of 2, 4 and 8 processes under every launcher available:
#   ramp-run   target/release/ramp-run -n N prog args
#   master     the AMUDP master form: prog N L args
#   mpiexec    mpiexec -n N prog args (PMI; counted and shown as SKIPPED if not installed; a
#              probe job must first run as one N-process job, else one FAIL and no runs)
# then the whole suite once more under ramp-run with packet loss, duplication and
# reordering (RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.01 RAMP_FAULT_REORDER=0.02), and
# negative checks: testreduce with rank 1 calling AMX_SPMDExit(3) must make the launcher
# exit with 3 (ramp-run, master form) or non-zero (mpiexec); with rank 1 calling
# AMX_FatalErr (abort) the launcher must exit non-zero.
#
# A run passes when it exits 0 within 60 s, its log has no "FAILED CHECK" / "FATAL ERROR",
# has rank 0's figures line ("<prog>: procs=N ...") and the global statistics dump;
# testoutput's routed stdout must also hold every line and both unterminated tails of
# every rank.  testbounce runs only with an even number of processes.
#
# Usage: bash c-tests/legacy/run.sh [--only P1,P2] [--sizes "2 4 8"]
#            [--launchers "ramp-run master mpiexec"] [--no-loss] [--no-negative]
# Logs: c-tests/legacy/build/logs/<prog>.<launcher>.<N>.log
# Output: one PASS/FAIL line per run (with rank 0's figures), then
# "legacy: N passed, M failed, K skipped"; exit status non-zero on any failure.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 2

ONLY=""
SIZES="2 4 8"
LAUNCHERS="ramp-run master mpiexec"
LOSS=1
NEGATIVE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="${2:?}"; shift 2 ;;
    --sizes) SIZES="${2:?}"; shift 2 ;;
    --launchers) LAUNCHERS="${2:?}"; shift 2 ;;
    --no-loss) LOSS=0; shift ;;
    --no-negative) NEGATIVE=0; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

LIB_DIR="target/release"
RAMP_RUN="target/release/ramp-run"
BUILD="c-tests/legacy/build"
LOGS="$BUILD/logs"
mkdir -p "$LOGS"

if [ ! -e "$LIB_DIR/libramp.so" ]; then
  echo "legacy: $LIB_DIR/libramp.so not found (run cargo build --release first)" >&2
  exit 2
fi
# the soname is libramp.so.0
if [ ! -e "$LIB_DIR/libramp.so.0" ]; then
  ln -sf libramp.so "$LIB_DIR/libramp.so.0" || { echo "legacy: cannot create $LIB_DIR/libramp.so.0" >&2; exit 2; }
fi

PROGS="testping testlatency testlatencyM testbulk testgetput testreadwrite testreduce testbounce testam testoutput"
if [ -n "$ONLY" ]; then PROGS="${ONLY//,/ }"; fi

PASSED=0
FAILED=0
SKIPPED=0
FAILED_RUNS=""

pass() { PASSED=$((PASSED + 1)); echo "PASS $1"; }
fail() { # fail LABEL LOG [REASON]
  FAILED=$((FAILED + 1))
  FAILED_RUNS="$FAILED_RUNS
  $1"
  echo "FAIL $1${3:+: $3}"
  if [ -n "$2" ] && [ -s "$2" ]; then
    # without the statistics dump
    awk '/^Global stats:/ { skip = 1 } !skip && !/^-----/ { print } /^-----/ { skip = 0 }' "$2" |
      tail -n 25 | sed 's/^/    | /'
  fi
}

# ------------------------------------------------------------------------------------
# build
# ------------------------------------------------------------------------------------
BUILT=""
for p in $PROGS; do
  if [ ! -f "c-tests/legacy/$p.c" ]; then
    fail "build $p" "" "no such program c-tests/legacy/$p.c"
    continue
  fi
  if cc -std=gnu11 -Wall -Wextra -Werror -DAMUDP -DAMX_NDEBUG -Iinclude \
        -o "$BUILD/$p" "c-tests/legacy/$p.c" c-tests/legacy/apputils.c \
        -L"$LIB_DIR" -lramp -Wl,-rpath,"$PWD/$LIB_DIR" -lm >"$LOGS/$p.build.log" 2>&1; then
    BUILT="$BUILT $p"
  else
    fail "build $p" "$LOGS/$p.build.log" "compilation failed"
  fi
done

# ------------------------------------------------------------------------------------
# arguments: small counts; the mode (P: polling, B: blocking) alternates
# ------------------------------------------------------------------------------------
OUT_ITERS=100
OUT_WIDTH=100
args_for() { # args_for PROG N MODE LAUNCHER
  case "$1" in
    testping)      echo "2000 $3" ;;
    testlatency)   echo "1000 $3" ;;
    testlatencyM)  # medium sizes from 1 byte to AM_MaxMedium() (65000)
                   case "$2" in 2) echo "1000 $3 1" ;; 4) echo "1000 $3 4096" ;; *) echo "300 $3 65000" ;; esac ;;
    testbulk)      # 2.5 MiB per iteration: 3 chunks of at most AM_MaxLong() (1 MiB)
                   if [ "$3" = B ]; then echo "8 2621440 B H"; else echo "8 2621440 P F"; fi ;;
    testgetput)    echo "100" ;;
    testreadwrite) echo "10" ;;
    testreduce)    echo "" ;;
    testbounce)    echo "20 $3" ;;
    testam)        echo "100 $3" ;;
    testoutput)    # mpiexec forwards raw chunks of each process's output (lines of a fully
                   # buffered stdout get cut and interleaved): line-buffered stdout there
                   if [ "$4" = mpiexec ]; then echo "$OUT_ITERS $OUT_WIDTH L"; else echo "$OUT_ITERS $OUT_WIDTH"; fi ;;
  esac
}

have_mpiexec=0
if command -v mpiexec >/dev/null 2>&1; then have_mpiexec=1; fi
mpiexec_ok=0  # set by the probe below

# the environment testam putenv's before start-up (and checks with AMX_SPMDgetenvMaster:
# ramp falls back to the worker's own start-up environment for keys the launcher lacks)

# launch LAUNCHER N LOG PROG ARGS...   (extra environment in EXTRA_ENV, an array)
launch() {
  local launcher="$1" n="$2" log="$3"; shift 3
  local prog="$1"; shift
  local envpre=()
  case "$launcher" in
    ramp-run) env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 60 "$RAMP_RUN" -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
    master)   env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 60 "$BUILD/$prog" "$n" L "$@" >"$log" 2>&1 ;;
    mpiexec)  env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 60 mpiexec -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
  esac
}

# testoutput: every line "testoutput rank R line I: <filler>#" and the tails <RR| |RR>
check_output() { # check_output LOG N ITERS MAXWIDTH
  awk -v N="$2" -v ITERS="$3" -v MAXW="$4" '
    { all = all $0 "\n" }
    END {
      letters = "abcdefghijklmnopqrstuvwxyz"; missing = 0
      for (r = 0; r < N; r++) {
        for (i = 0; i < ITERS; i++) {
          pre = "testoutput rank " r " line " i ": "; n = length(pre)
          width = (MAXW - n - 1 > 0) ? (i * 7 + r * 3) % (MAXW - n) : 0
          s = pre
          for (j = 0; j < width; j++) s = s substr(letters, (r + i + j) % 26 + 1, 1)
          s = s "#"
          if (index(all, s) == 0) { if (missing < 5) print "missing line: " s; missing++ }
        }
        t1 = sprintf("<%02d|", r); t2 = sprintf("|%02d>", r)
        if (index(all, t1) == 0) { print "missing tail before Barrier: " t1; missing++ }
        if (index(all, t2) == 0) { print "missing tail before Exit: " t2; missing++ }
      }
      if (missing) { print missing " missing"; exit 1 }
    }' "$1"
}

# run_one LABEL-SUFFIX LAUNCHER N PROG MODE
run_one() {
  local tag="$1" launcher="$2" n="$3" prog="$4" mode="$5"
  local args; args="$(args_for "$prog" "$n" "$mode" "$launcher")"
  local log="$LOGS/$prog.$launcher$tag.$n.log"
  local label="$prog $launcher$tag N=$n${args:+ args=\"$args\"}"
  local t0 t1 rc secs fig
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  launch "$launcher" "$n" "$log" "$prog" $args
  rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  label="$label (${secs}s)"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$label" "$log" "timed out (60 s)"; return; fi
  if [ $rc -ne 0 ]; then fail "$label" "$log" "exit code $rc"; return; fi
  if grep -q 'FAILED CHECK\|FATAL ERROR' "$log"; then fail "$label" "$log" "exit code 0 but the log reports a failure"; return; fi
  # (anywhere in a line: testoutput's unterminated tails may precede it)
  fig="$(grep -a -o -m1 "$prog: procs=.*" "$log")"
  if [ -z "$fig" ]; then fail "$label" "$log" "no \"$prog: procs=...\" line from rank 0"; return; fi
  if [[ "$fig" != *" procs=$n "* ]]; then fail "$label" "$log" "the job did not have $n processes: $fig"; return; fi
  if ! grep -q '^Global stats:' "$log"; then fail "$label" "$log" "no statistics from printGlobalStats"; return; fi
  if [ "$prog" = testoutput ]; then
    local out
    if ! out="$(check_output "$log" "$n" "$OUT_ITERS" "$OUT_WIDTH")"; then fail "$label" "$log" "routed output incomplete: $(echo "$out" | tr '\n' ';')"; return; fi
  fi
  pass "$label"
  echo "      $fig"
}

# ------------------------------------------------------------------------------------
# the suite
# ------------------------------------------------------------------------------------
EXTRA_ENV=()
li=0
for launcher in $LAUNCHERS; do
  li=$((li + 1))
  case "$launcher" in
    ramp-run)
      if [ ! -x "$RAMP_RUN" ]; then fail "launcher ramp-run" "" "$RAMP_RUN not found"; continue; fi ;;
    mpiexec)
      if [ $have_mpiexec -eq 0 ]; then
        # every program at every size under mpiexec: counted as skipped, never as passed
        nskip=0
        for n in $SIZES; do for p in $BUILT; do
          if [ "$p" = testbounce ] && [ $((n % 2)) -ne 0 ] && [ "$n" -ne 1 ]; then continue; fi
          nskip=$((nskip + 1))
        done; done
        SKIPPED=$((SKIPPED + nskip))
        echo "SKIPPED mpiexec: $nskip runs (every program and size): mpiexec is not installed"
        continue
      fi
      # Probe: a process that does not recognise mpiexec's PMI environment takes itself
      # for an AMUDP master and would spawn argv[1] workers of its own: stop here then.
      plog="$LOGS/mpiexec-probe.log"
      timeout -k 5 30 mpiexec -n 2 "$BUILD/testreduce" >"$plog" 2>&1
      prc=$?
      if grep -q 'testreduce: procs=2 ' "$plog" && [ $prc -eq 0 ]; then
        mpiexec_ok=1
        pass "mpiexec probe: testreduce under mpiexec -n 2 ran as a 2-process job"
      else
        fail "mpiexec probe: mpiexec -n 2 testreduce (exit $prc) did not run as one 2-process job (PMI not recognised?); skipping the mpiexec runs" "$plog"
        continue
      fi ;;
    master) ;;
    *) echo "run.sh: unknown launcher $launcher" >&2; exit 2 ;;
  esac
  si=0
  for n in $SIZES; do
    si=$((si + 1))
    if [ $(((li + si) % 2)) -eq 0 ]; then mode=P; else mode=B; fi
    for p in $BUILT; do
      if [ "$p" = testbounce ] && [ $((n % 2)) -ne 0 ] && [ "$n" -ne 1 ]; then
        echo "SKIP testbounce $launcher N=$n: needs an even number of processes"; continue
      fi
      run_one "" "$launcher" "$n" "$p" "$mode"
    done
  done
done

if [ $LOSS -eq 1 ]; then
  if [ -x "$RAMP_RUN" ]; then
    EXTRA_ENV=(RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.01 RAMP_FAULT_REORDER=0.02)
    echo "--- under ${EXTRA_ENV[*]} (ramp-run)"
    si=0
    for n in $SIZES; do
      si=$((si + 1))
      if [ $((si % 2)) -eq 0 ]; then mode=P; else mode=B; fi
      for p in $BUILT; do
        if [ "$p" = testbounce ] && [ $((n % 2)) -ne 0 ] && [ "$n" -ne 1 ]; then continue; fi
        run_one "+loss" ramp-run "$n" "$p" "$mode"
      done
    done
    EXTRA_ENV=()
  else
    fail "loss pass" "" "$RAMP_RUN not found"
  fi
fi

# ------------------------------------------------------------------------------------
# negative: a rank calling AMX_SPMDExit(3) must fail the job
# ------------------------------------------------------------------------------------
if [ $NEGATIVE -eq 1 ] && [[ " $BUILT " == *" testreduce "* ]]; then
  for launcher in $LAUNCHERS; do
    case "$launcher" in
      ramp-run) [ -x "$RAMP_RUN" ] || continue; want=3 ;;
      master) want=3 ;;
      mpiexec)
        if [ $mpiexec_ok -ne 1 ]; then
          if [ $have_mpiexec -eq 0 ]; then
            SKIPPED=$((SKIPPED + 2))
            echo "SKIPPED negative: testreduce mpiexec N=4 (2 runs): mpiexec is not installed"
          fi
          continue
        fi
        want=nonzero ;;
      *) continue ;;
    esac
    for how in exit fatal; do
      log="$LOGS/testreduce.$launcher.$how.log"
      if [ $how = exit ]; then
        label="negative: testreduce $launcher N=4, rank 1 calls AMX_SPMDExit(3)"
      else
        label="negative: testreduce $launcher N=4, rank 1 calls AMX_FatalErr (abort)"; want=nonzero
      fi
      launch "$launcher" 4 "$log" testreduce 1 $how
      rc=$?
      if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$label" "$log" "timed out (60 s)"
      elif [ $rc -eq 0 ]; then fail "$label" "$log" "launcher exited 0"
      elif [ "$want" = 3 ] && [ $rc -ne 3 ]; then fail "$label" "$log" "launcher exited $rc, expected 3"
      else pass "$label (launcher exit code $rc)"
      fi
    done
  done
fi

echo "legacy: $PASSED passed, $FAILED failed, $SKIPPED skipped"
if [ $FAILED -ne 0 ]; then
  echo "failed:$FAILED_RUNS"
  exit 1
fi
exit 0
