#!/usr/bin/env bash
# Ports of GASNet's AMX test programs (c-tests/legacy/*.c), built as an AMUDP user builds
# them (only include/amudp.h + amudp_spmd.h, -DAMUDP -DAMX_NDEBUG, -lramp) and run as
# SPMD jobs of 2, 4 and 8 processes under every launcher available:
#   ramp-run   target/release/ramp-run -n N prog args
#   master     the AMUDP master form: prog N L args
#   mpiexec    mpiexec -n N prog args (PMI; counted and shown as SKIPPED if not installed; a
#              probe job must first run as one N-process job, else one FAIL and no runs)
# and, for a subset of the programs ($FOREIGN_PROGS) at the sizes of --foreign-sizes
# (default 2 4) plus testreduce at 16, under the launchers of a batch system:
#   srun-pmi2  srun -O -K --mpi=pmi2 -n N prog args   (Slurm; PMI-2)
#   srun-pmix  srun -O -K --mpi=pmix -n N prog args   (Slurm; PMIx)
#   mpirun     /usr/bin/mpirun.openmpi --allow-run-as-root --oversubscribe -n N prog args
#              (Open MPI; PMIx)
#   (SKIPPED and counted when `scripts/slurm.sh check` fails / mpirun.openmpi is not
#   installed; otherwise a probe job must run as one 2-process job, else one FAIL)
# then the whole suite once more under ramp-run with packet loss, duplication and
# reordering (RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.01 RAMP_FAULT_REORDER=0.02), and
# negative checks, the same testreduce binary under every launcher at N=4: rank 1 calling
# AMX_SPMDExit(3) must make the launcher exit with 3 (every launcher; under srun no task
# may be reported killed: the others exit by themselves), with rank 1 calling AMX_FatalErr
# (abort) or raising SIGKILL the launcher must exit non-zero (128+9 = 137 for a SIGKILL
# under ramp-run and srun -K; 255, AMUDP's code for a lost rank, under the master form).  srun gets -K (--kill-on-bad-exit): without
# it Slurm never tells the other tasks that one died, and they wait for it.
#
# A run passes when it exits 0 within RUN_LIMIT (300 s: a watchdog for a hang, not a speed test), its log has no "FAILED CHECK" / "FATAL ERROR",
# has rank 0's figures line ("<prog>: procs=N ...") and the global statistics dump;
# testoutput's routed stdout must also hold every line and both unterminated tails of
# every rank.  testbounce runs only with an even number of processes.
#
# Usage: bash c-tests/legacy/run.sh [--only P1,P2] [--sizes "2 4 8"] [--foreign-sizes "2 4"]
#            [--launchers "ramp-run master mpiexec srun-pmi2 srun-pmix mpirun"]
#            [--no-loss] [--no-negative]
# Logs: c-tests/legacy/build/logs/<prog>.<launcher>.<N>.log
# Output: one PASS/FAIL line per run (with rank 0's figures), then
# "legacy: N passed, M failed, K skipped"; exit status non-zero on any failure.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 2

# Each run is killed after this long (a hang); a working run takes seconds.
RUN_LIMIT=300
ONLY=""
SIZES="2 4 8"
FOREIGN_SIZES="2 4"
LAUNCHERS="ramp-run master mpiexec srun-pmi2 srun-pmix mpirun"
LOSS=1
NEGATIVE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="${2:?}"; shift 2 ;;
    --sizes) SIZES="${2:?}"; shift 2 ;;
    --foreign-sizes) FOREIGN_SIZES="${2:?}"; shift 2 ;;
    --launchers) LAUNCHERS="${2:?}"; shift 2 ;;
    --no-loss) LOSS=0; shift ;;
    --no-negative) NEGATIVE=0; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
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
# under srun and mpirun: one of each kind (short, bulk, get/put, reduction with its wait,
# handlers + environment + exit callback, routed output)
FOREIGN_PROGS="testping testbulk testgetput testreduce testam testoutput"
# not testoutput under mpirun: Open MPI's output forwarding (4.1) reads each process's
# stdout in 4 KiB pieces and now and then loses the end of the line a piece cuts
# ("...uvwx: mnopqr#" for "...uvwxyza#"; also with line-buffered stdout); ramp does not
# touch stdout under a foreign launcher
MPIRUN_PROGS="${FOREIGN_PROGS/ testoutput/}"
MPIRUN_OPENMPI=/usr/bin/mpirun.openmpi
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
    testoutput)    # mpiexec, srun and mpirun forward raw chunks of each process's output
                   # (lines of a fully buffered stdout get cut and interleaved): line-buffered
                   # stdout there
                   case "$4" in ramp-run|master) echo "$OUT_ITERS $OUT_WIDTH" ;; *) echo "$OUT_ITERS $OUT_WIDTH L" ;; esac ;;
  esac
}

have_mpiexec=0
if command -v mpiexec >/dev/null 2>&1; then have_mpiexec=1; fi
mpiexec_ok=0  # set by the probe below
declare -A LAUNCHER_OK=()   # launcher -> 1 once its probe job ran (srun-*, mpirun)
declare -A LAUNCHER_WHY=()  # launcher -> why it cannot run here (srun-*, mpirun)

# foreign_absent LAUNCHER: prints why LAUNCHER cannot run here, or nothing (status 1)
foreign_absent() {
  case "$1" in
    srun-pmi2|srun-pmix)
      local why
      if ! why="$(bash scripts/slurm.sh check 2>&1)"; then
        echo "${why:-no working Slurm (scripts/slurm.sh check failed)}" | grep -v '^$' | head -n 1; return 0
      fi
      if ! srun --mpi=list 2>&1 | grep -qw "${1#srun-}"; then
        echo "this Slurm has no mpi/${1#srun-} plugin (srun --mpi=list)"; return 0
      fi ;;
    mpirun)
      if [ ! -x "$MPIRUN_OPENMPI" ]; then echo "Open MPI's mpirun is not installed (apt-get install openmpi-bin)"; return 0; fi ;;
  esac
  return 1
}

# runs_for LAUNCHER: the "N:prog" runs of the suite under LAUNCHER
runs_for() {
  local n p progs=$BUILT sizes=$SIZES
  case "$1" in
    srun-*|mpirun)
      sizes=$FOREIGN_SIZES; progs=""
      local want=$FOREIGN_PROGS
      [ "$1" = mpirun ] && want=$MPIRUN_PROGS
      for p in $BUILT; do [[ " $want " == *" $p "* ]] && progs="$progs $p"; done ;;
  esac
  for n in $sizes; do for p in $progs; do
    if [ "$p" = testbounce ] && [ $((n % 2)) -ne 0 ] && [ "$n" -ne 1 ]; then continue; fi
    echo "$n:$p"
  done; done
  case "$1" in
    srun-*|mpirun) [[ " $BUILT " == *" testreduce "* ]] && echo "16:testreduce" ;;
  esac
}

# the environment testam putenv's before start-up (and checks with AMX_SPMDgetenvMaster:
# ramp falls back to the worker's own start-up environment for keys the launcher lacks)

# launch LAUNCHER N LOG PROG ARGS...   (extra environment in EXTRA_ENV, an array)
launch() {
  local launcher="$1" n="$2" log="$3"; shift 3
  local prog="$1"; shift
  local envpre=()
  case "$launcher" in
    ramp-run) env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 "$RUN_LIMIT" "$RAMP_RUN" -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
    master)   env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 "$RUN_LIMIT" "$BUILD/$prog" "$n" L "$@" >"$log" 2>&1 ;;
    mpiexec)  env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 "$RUN_LIMIT" mpiexec -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
    srun-pmi2|srun-pmix)
              env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 "$RUN_LIMIT" srun -O ${SRUN_K--K} --mpi="${launcher#srun-}" -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
    mpirun)   env "${EXTRA_ENV[@]}" "${envpre[@]}" timeout -k 5 "$RUN_LIMIT" "$MPIRUN_OPENMPI" --allow-run-as-root --oversubscribe -n "$n" "$BUILD/$prog" "$@" >"$log" 2>&1 ;;
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
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$label" "$log" "timed out ($RUN_LIMIT s)"; return; fi
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
        nskip=$(runs_for mpiexec | grep -c '')
        SKIPPED=$((SKIPPED + nskip))
        echo "SKIPPED mpiexec: $nskip runs (every program and size): mpiexec is not installed"
        continue
      fi
      # Probe: a process that does not recognise mpiexec's PMI environment takes itself
      # for an AMUDP master and would spawn argv[1] workers of its own: stop here then.
      plog="$LOGS/mpiexec-probe.log"
      timeout -k 5 "$RUN_LIMIT" mpiexec -n 2 "$BUILD/testreduce" >"$plog" 2>&1
      prc=$?
      if grep -q 'testreduce: procs=2 ' "$plog" && [ $prc -eq 0 ]; then
        mpiexec_ok=1
        pass "mpiexec probe: testreduce under mpiexec -n 2 ran as a 2-process job"
      else
        fail "mpiexec probe: mpiexec -n 2 testreduce (exit $prc) did not run as one 2-process job (PMI not recognised?); skipping the mpiexec runs" "$plog"
        continue
      fi ;;
    srun-pmi2|srun-pmix|mpirun)
      if why="$(foreign_absent "$launcher")"; then
        LAUNCHER_WHY[$launcher]="$why"
        nskip=$(runs_for "$launcher" | grep -c '')
        SKIPPED=$((SKIPPED + nskip))
        echo "SKIPPED $launcher: $nskip runs: $why"
        continue
      fi
      plog="$LOGS/$launcher-probe.log"
      launch "$launcher" 2 "$plog" testreduce
      prc=$?
      if grep -q 'testreduce: procs=2 ' "$plog" && [ $prc -eq 0 ]; then
        LAUNCHER_OK[$launcher]=1
        pass "$launcher probe: testreduce under $launcher -n 2 ran as a 2-process job"
      else
        fail "$launcher probe: testreduce (exit $prc) did not run as one 2-process job; skipping the $launcher runs" "$plog"
        continue
      fi ;;
    master) ;;
    *) echo "run.sh: unknown launcher $launcher" >&2; exit 2 ;;
  esac
  si=0
  last_n=""
  for run in $(runs_for "$launcher"); do
    n=${run%%:*} p=${run#*:}
    if [ "$n" != "$last_n" ]; then si=$((si + 1)); last_n=$n; fi
    if [ $(((li + si) % 2)) -eq 0 ]; then mode=P; else mode=B; fi
    run_one "" "$launcher" "$n" "$p" "$mode"
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
      ramp-run) [ -x "$RAMP_RUN" ] || continue ;;
      master) ;;
      mpiexec)
        if [ $mpiexec_ok -ne 1 ]; then
          if [ $have_mpiexec -eq 0 ]; then
            SKIPPED=$((SKIPPED + 3))
            echo "SKIPPED negative: testreduce mpiexec N=4 (3 runs): mpiexec is not installed"
          fi
          continue
        fi ;;
      srun-pmi2|srun-pmix|mpirun)
        if [ -z "${LAUNCHER_OK[$launcher]:-}" ]; then
          if [ -n "${LAUNCHER_WHY[$launcher]:-}" ]; then
            runs=3; [[ $launcher == srun-* ]] && runs=4
            SKIPPED=$((SKIPPED + runs))
            echo "SKIPPED negative: testreduce $launcher N=4 ($runs runs): ${LAUNCHER_WHY[$launcher]}"
          fi
          continue
        fi ;;
      *) continue ;;
    esac
    hows="exit fatal kill"
    # without -K srun ends nothing when a task dies: the survivors must find it
    [[ $launcher == srun-* ]] && hows="$hows kill-noK"
    for how in $hows; do
      log="$LOGS/testreduce.$launcher.$how.log"
      case $how in
        exit)  label="negative: testreduce $launcher N=4, rank 1 calls AMX_SPMDExit(3)"; want=3 ;;
        fatal) label="negative: testreduce $launcher N=4, rank 1 calls AMX_FatalErr (abort)"; want=nonzero ;;
        kill)  label="negative: testreduce $launcher N=4, rank 1 raises SIGKILL"
               # srun -K: 128 + the highest signal of any task (the survivors' SIGTERM
               # when Slurm kills them: 143)
               case "$launcher" in ramp-run) want=137 ;; master) want=255 ;; srun-*) want="137 143" ;; *) want=nonzero ;; esac ;;
        kill-noK) label="negative: testreduce $launcher without -K N=4, rank 1 raises SIGKILL"
               # the survivors find the death (src/spmd/notice.rs: probes in collectives,
               # RAMP_PEER_TIMEOUT_MS) and end with 137; pmix: Slurm cancels the step
               want="137 143" ;;
      esac
      t0=$SECONDS
      if [ $how = kill-noK ]; then
        EXTRA_ENV=(RAMP_PEER_TIMEOUT_MS=3000); SRUN_K=" "
        launch "$launcher" 4 "$log" testreduce 1 kill
        rc=$?; EXTRA_ENV=(); unset SRUN_K; (exit $rc)
      else
        launch "$launcher" 4 "$log" testreduce 1 $how
      fi
      rc=$?
      if [ $rc -eq 124 ] || [ $((SECONDS - t0)) -ge $RUN_LIMIT ]; then fail "$label" "$log" "timed out ($RUN_LIMIT s)"
      elif [ $rc -eq 0 ]; then fail "$label" "$log" "launcher exited 0"
      elif [ "$want" != nonzero ] && [[ " $want " != *" $rc "* ]]; then fail "$label" "$log" "launcher exited $rc, expected $want"
      elif [ $how = exit ] && [[ $launcher == srun-* ]] && grep -q 'Killed\|Terminated' "$log"; then
        fail "$label" "$log" "srun exited 3 but a task was killed"
      elif [ $how = kill ] && [[ $launcher == srun-* ]] && ! grep -q 'task 1: Killed' "$log"; then
        fail "$label" "$log" "srun does not name task 1 as killed"
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
