#!/usr/bin/env bash
# Every test of ramp, in order; the README's test command and what CI (.ci/run) runs.
#
# Usage: bash scripts/test-all.sh
#
# Steps (each announced with a banner; the first failure stops the run with a message
# naming the step, and the exit status is non-zero):
#   0. prerequisites   on a fresh Debian machine, installs what is missing, by package
#                      name: apt-get install -y pkg-config gcc python3 python3-pip
#                      (openssh-client/-server for the 'S' spawner check, ...)
#                      (apt-get update once first), rustup component add clippy rustfmt,
#                      and pytest with pip when python/tests exists
#   1. fmt             cargo fmt --check
#   2. clippy          cargo clippy --all-targets -- -D warnings, then
#                      cargo clippy --lib -- -D warnings (the shipped library,
#                      without the 'testing' feature: dead internals show up)
#   3. rust tests      cargo test --release; then the tests marked #[ignore = "needs ..."]
#                      that need something this machine may lack, each suite only when a
#                      probe finds it: spmd_netns (scripts/netns.sh check: network
#                      namespaces can be made), link_shaped (scripts/netns.sh
#                      check-shape: and tc can shape a link; ~1 min, much longer where
#                      congestion control is missing), link_rails (netns.sh check:
#                      a job over two rails while they go down and up), link_rails_langs
#                      (netns.sh check and mpiexec: the same from C under mpiexec and from
#                      Python under ramp-run), spmd_mpiexec and pmi (mpiexec runs),
#                      spmd_slurm (scripts/slurm.sh check: srun runs; step 0 brings up a
#                      one-node Slurm with scripts/slurm.sh up, and the end of the run
#                      takes it down), spmd_openmpi (/usr/bin/mpirun.openmpi runs; step 0
#                      installs openmpi-bin and keeps mpiexec pointing at MPICH's Hydra),
#                      with cargo test --release --test X -- --ignored;
#                      otherwise SKIPPED
#   4. build           cargo build --release (the shipped library, without the testing
#                      feature, which the C, header, legacy and install steps then use)
#   5. headers         python3 c-tests/check_headers.py --self-test, then
#                      python3 c-tests/check_headers.py --lib target/release/libramp.so
#                        --generated bindings/ramp_gen.h --cargo Cargo.toml
#   6. C tests         bash c-tests/run.sh
#   7. AMUDP headers   bash c-tests/amudp_compile.sh, then bash c-tests/gasnet/run.sh
#                      (GASNet udp-conduit compatibility, issue 41: amudp_const.h asserts,
#                      handler callbacks, GASNET_* settings, exported AMUDP_* symbols,
#                      statistics, exits, the 'C' and 'S' spawners; 'S' SKIPPED and
#                      counted when no ssh server on localhost can be reached)
#   8. legacy AMX      bash c-tests/legacy/run.sh (ramp-run, ./prog N L, mpiexec, srun
#                      --mpi=pmi2/pmix, mpirun.openmpi; those absent SKIPPED and counted),
#                      then bash scripts/startup-times.sh (start-up time per launcher,
#                      printed, not asserted)
#   9. install         bash scripts/test-install.sh
#  10. python tests    python3 -m pytest -rs python/tests (if python/tests exists; "no
#                      tests collected", exit 5, counts as success; pytest's skips, e.g.
#                      the numpy tests without numpy, are counted as skipped)
# At the end (or at the failure) it prints one line per step with its status and time,
# the list of skipped tests with their reasons, and the tests counted from each step's
# own summary line (cargo's "test result:", "X: N passed, M failed[, K skipped]",
# pytest's last line): "test-all: N passed, M failed, K skipped". A test that cannot run
# here is never counted as passed. Step logs: target/test-all/<step>.log.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

case "${1:-}" in
  -h|--help) sed -n '2,47p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test-all.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
esac

# ---- bookkeeping -----------------------------------------------------------------------
STEPS=(prerequisites fmt clippy "rust tests" build headers "C tests" "AMUDP headers" "legacy AMX ports" install "python tests")
declare -A STATUS=() SECS=()
T_START=""
LOGDIR="$ROOT/target/test-all"
mkdir -p "$LOGDIR" || exit 2
# One line per test (or group of tests) that could not run here: "where: what: reason".
# Written by the steps (also from subshells), read by the summary.
SKIPS="$LOGDIR/skipped.txt"
: >"$SKIPS"
: >"$LOGDIR/pytest-skips.txt"
rm -f "$LOGDIR/slurm-ours"
N_PASSED=0 N_FAILED=0 N_SKIPPED=0

# skip WHERE WHAT REASON: records a test that cannot run here.
skip() {
  echo "$1: $2: $3" >>"$SKIPS"
  echo "SKIPPED $1: $2: $3"
}

# tally LOG: adds the counts of the summary lines in LOG to N_PASSED/N_FAILED/N_SKIPPED.
tally() {
  local counts p f k
  counts="$(awk '
    /^test result: / {
      for (i = 1; i <= NF; i++) {
        v = $i; sub(/;$/, "", v)
        if (v == "passed") P += $(i - 1); else if (v == "failed") F += $(i - 1)
      }
      next
    }
    /^[A-Za-z][A-Za-z0-9 _.-]*: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ {
      n = split($0, w, /[ ,]+/)
      for (i = 2; i <= n; i++) {
        if (w[i] == "passed") P += w[i - 1]; else if (w[i] == "failed") F += w[i - 1]
        else if (w[i] == "skipped") K += w[i - 1]
      }
      next
    }
    /^=+ .* in [0-9.]+s( \([0-9:]+\))? =+$/ {   # pytest: "=== 3 passed, 2 skipped in 1.2s ==="
      n = split($0, w, /[ ,]+/)
      for (i = 2; i <= n; i++) {
        if (w[i] == "passed") P += w[i - 1]
        else if (w[i] == "failed" || w[i] == "error" || w[i] == "errors") F += w[i - 1]
        else if (w[i] == "skipped") K += w[i - 1]
      }
    }
    END { printf "%d %d %d\n", P, F, K }' "$1")"
  read -r p f k <<<"$counts"
  N_PASSED=$((N_PASSED + p)) N_FAILED=$((N_FAILED + f)) N_SKIPPED=$((N_SKIPPED + k))
}

now() { if [ -n "${EPOCHREALTIME:-}" ]; then echo "${EPOCHREALTIME/,/.}"; else date +%s.%N; fi; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
T_START="$(now)"

summary() {
  echo
  echo "==================== test-all summary ===================="
  local s
  for s in "${STEPS[@]}"; do
    if [ -n "${STATUS[$s]:-}" ]; then
      printf '  %-8s %-17s %8ss\n' "${STATUS[$s]}" "$s" "${SECS[$s]}"
    else
      printf '  %-8s %-17s %9s\n' "-" "$s" "(not run)"
    fi
  done
  printf '  total %30ss\n' "$(elapsed "$T_START" "$(now)")"
  # skips recorded by the steps themselves (not counted by a runner's summary line)
  local own
  own="$(grep -c '' "$SKIPS" 2>/dev/null)" || own=0
  N_SKIPPED=$((N_SKIPPED + own))
  echo
  if [ -s "$SKIPS" ] || [ -s "$LOGDIR/pytest-skips.txt" ]; then
    echo "skipped (could not run here; not counted as passed):"
    sed 's/^/  /' "$SKIPS"
    [ -s "$LOGDIR/pytest-skips.txt" ] && sed 's/^/  python: /' "$LOGDIR/pytest-skips.txt"
  else
    echo "skipped: none"
  fi
  echo "test-all: $N_PASSED passed, $N_FAILED failed, $N_SKIPPED skipped"
}

TOTAL=$((${#STEPS[@]} - 1))
banner() { # banner INDEX NAME COMMAND...
  local i="$1" name="$2"
  shift 2
  echo
  echo "==================== [$i/$TOTAL] $name ===================="
  [ $# -gt 0 ] && echo "\$ $*"
}

# step INDEX NAME COMMAND...: runs the command; stops everything when it fails.
step() {
  local i="$1" name="$2"
  shift 2
  banner "$i" "$name" "$@"
  local t0 rc log="$LOGDIR/${name// /-}.log"
  t0="$(now)"
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  SECS[$name]="$(elapsed "$t0" "$(now)")"
  tally "$log"
  if [ $rc -eq 0 ]; then
    STATUS[$name]=ok
  else
    STATUS[$name]=FAILED
    stop "$name" "'$*' exited with status $rc"
  fi
}

# Takes down the Slurm that step 0 brought up (not one that ran already).
slurm_down() {
  if [ -e "$LOGDIR/slurm-ours" ]; then
    rm -f "$LOGDIR/slurm-ours"
    bash scripts/slurm.sh down >/dev/null 2>&1 || echo "test-all: scripts/slurm.sh down failed" >&2
  fi
}

stop() { # stop STEP MESSAGE
  slurm_down
  summary
  echo
  echo "test-all: FAILED at step '$1': $2" >&2
  exit 1
}

# ---- 0. prerequisites ----------------------------------------------------------------------
APT_UPDATED=0
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "test-all: need root (or sudo) to run: $*" >&2; return 1
  fi
}
apt_install() { # apt_install PACKAGE...
  command -v apt-get >/dev/null 2>&1 || {
    echo "test-all: missing packages ($*) and no apt-get to install them; install them by hand" >&2
    return 1
  }
  if [ $APT_UPDATED -eq 0 ]; then
    echo "test-all: apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update || return 1
    APT_UPDATED=1
  fi
  echo "test-all: apt-get install -y $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

prerequisites() {
  local missing=()
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  { command -v gcc >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; } || missing+=(gcc)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    missing+=(python3-pip)
  fi
  { command -v readelf >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; } || missing+=(binutils)
  # MPICH's Hydra (mpiexec): jobs started through the PMI wire protocol
  command -v mpiexec >/dev/null 2>&1 || missing+=(mpich)
  # ip netns / veth: jobs whose workers sit in separate network namespaces
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  # Open MPI's mpirun (PMIx): installed under its own name, mpirun.openmpi
  [ -x /usr/bin/mpirun.openmpi ] || missing+=(openmpi-bin)
  # UCX's ucx_perftest: ramp bench --loggp's UCX line, which tests/loggp_cli.rs checks
  command -v ucx_perftest >/dev/null 2>&1 || missing+=(ucx-utils)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test-all: missing: ${missing[*]}"
    apt_install "${missing[@]}" || return 1
  else
    echo "test-all: pkg-config, gcc, python3, pip, binutils, mpich, iproute2, openmpi-bin, ucx-utils: present"
  fi
  # optional: the 'S' (ssh) spawner check of c-tests/gasnet/run.sh runs an sshd of its
  # own on a private port; without one it is SKIPPED (counted)
  local ssh_pkgs=()
  command -v ssh >/dev/null 2>&1 || ssh_pkgs+=(openssh-client)
  [ -x /usr/sbin/sshd ] || ssh_pkgs+=(openssh-server)
  if [ ${#ssh_pkgs[@]} -gt 0 ]; then
    apt_install "${ssh_pkgs[@]}" ||
      echo "test-all: could not install ${ssh_pkgs[*]}: the 'S' spawner check will be SKIPPED"
  fi
  # Installing openmpi-bin points Debian's mpirun/mpiexec alternative at Open MPI;
  # the mpiexec suites need MPICH's Hydra there.
  if [ -x /usr/bin/mpirun.mpich ] && ! mpiexec --version 2>/dev/null | grep -q HYDRA; then
    echo "test-all: update-alternatives --set mpirun /usr/bin/mpirun.mpich (mpiexec is MPICH's Hydra)"
    as_root update-alternatives --set mpirun /usr/bin/mpirun.mpich || return 1
  fi

  if ! command -v cargo >/dev/null 2>&1; then
    echo "test-all: cargo not found; install the Rust toolchain (https://rustup.rs), then rerun" >&2
    return 1
  fi
  local comp
  for comp in clippy rustfmt; do
    if command -v rustup >/dev/null 2>&1; then
      if ! rustup component list --installed 2>/dev/null | grep -q "^$comp"; then
        echo "test-all: rustup component add $comp"
        rustup component add "$comp" || return 1
      fi
    fi
  done
  cargo fmt --version >/dev/null 2>&1 || { echo "test-all: 'cargo fmt' unavailable (rustup component add rustfmt)" >&2; return 1; }
  cargo clippy --version >/dev/null 2>&1 || { echo "test-all: 'cargo clippy' unavailable (rustup component add clippy)" >&2; return 1; }

  # A one-node Slurm for the spmd_slurm suite; a machine that cannot run it
  # only skips those tests (the reason is printed here and at the suite).
  if bash scripts/slurm.sh check >/dev/null 2>&1; then
    echo "test-all: Slurm already runs; using it"
  elif bash scripts/slurm.sh up; then
    touch "$LOGDIR/slurm-ours"
  else
    echo "test-all: no Slurm here (scripts/slurm.sh up failed); the spmd_slurm tests will be skipped"
  fi
  echo "test-all: $(cargo --version); $(cargo clippy --version); $(cargo fmt --version)"

  # numpy is optional for the package; its tests run when it is there
  if [ -d python/tests ] && ! python3 -c 'import numpy' >/dev/null 2>&1; then
    echo "test-all: python3 -m pip install numpy (optional)"
    python3 -m pip install --quiet numpy || echo "test-all: numpy not installed; its tests will be skipped"
  fi
  if [ -d python/tests ] && ! python3 -m pytest --version >/dev/null 2>&1; then
    echo "test-all: python3 -m pip install pytest"
    python3 -m pip install --quiet pytest ||
      python3 -m pip install --quiet --user pytest ||
      apt_install python3-pytest || return 1
    python3 -m pytest --version >/dev/null 2>&1 || { echo "test-all: pytest still not importable" >&2; return 1; }
  fi
  return 0
}

python_tests() {
  if [ ! -d python/tests ]; then
    echo "test-all: python/tests does not exist; nothing to run"
    return 0
  fi
  # (pyproject.toml's faulthandler_timeout prints every thread's stack of a test
  # that runs for minutes)
  bounded 1800 pytest python3 -m pytest -rs python/tests 2>&1 | tee "$LOGDIR/pytest.out"
  local rc=${PIPESTATUS[0]}
  # "SKIPPED [2] python/tests/test_messages.py:114: numpy is not installed"
  grep '^SKIPPED \[' "$LOGDIR/pytest.out" | sed 's/^SKIPPED //' >"$LOGDIR/pytest-skips.txt"
  if [ $rc -eq 5 ]; then
    echo "test-all: pytest collected no tests (exit 5); counted as success"
    return 0
  fi
  return $rc
}

# The suites whose tests are #[ignore = "needs ..."]: run only where the probe succeeds.
have_netns() { bash scripts/netns.sh check; }
have_shaping() { bash scripts/netns.sh check-shape; }
have_mpiexec() {
  command -v mpiexec >/dev/null 2>&1 || { echo "mpiexec (MPICH Hydra) is not installed" >&2; return 1; }
  timeout 30 mpiexec -n 1 true >/dev/null 2>&1 || { echo "'mpiexec -n 1 true' does not run" >&2; return 1; }
}
have_slurm() { bash scripts/slurm.sh check; }
have_openmpi() {
  [ -x /usr/bin/mpirun.openmpi ] || { echo "Open MPI's mpirun is not installed (apt-get install openmpi-bin)" >&2; return 1; }
  timeout 60 /usr/bin/mpirun.openmpi --allow-run-as-root --oversubscribe -n 1 true >/dev/null 2>&1 ||
    { echo "'mpirun.openmpi -n 1 true' does not run" >&2; return 1; }
}
have_netns_mpiexec() { have_netns && have_mpiexec; }
GATED=("spmd_netns have_netns" "link_shaped have_shaping" "link_rails have_netns" "link_rails_langs have_netns_mpiexec" "spmd_mpiexec have_mpiexec" "pmi have_mpiexec" "spmd_slurm have_slurm" "spmd_openmpi have_openmpi")

# bounded SECONDS WHAT CMD...: CMD, killed after SECONDS (a hang fails its step with a
# message instead of eating the whole CI run's time).
bounded() {
  local secs="$1" what="$2"
  shift 2
  timeout -k 30 "$secs" "$@"
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "test-all: $what did not finish within $secs s (killed: a hang?)" >&2
  fi
  return $rc
}

rust_tests() {
  bounded 2700 "cargo test --release" cargo test --release || return 1
  local g suite probe why names n
  for g in "${GATED[@]}"; do
    read -r suite probe <<<"$g"
    echo
    if why="$($probe 2>&1)"; then
      echo "test-all: $suite: $probe ok; running its ignored tests"
      echo "\$ cargo test --release --test $suite -- --ignored"
      bounded 1200 "$suite --ignored" cargo test --release --test "$suite" -- --ignored || return 1
    else
      why="$(echo "$why" | grep -v '^$' | head -n 1)"
      names="$(cargo test --release --test "$suite" -- --ignored --list 2>/dev/null | sed -n 's/: test$//p')"
      n=0
      for t in $names; do
        skip "rust $suite" "$t" "${why:-$probe failed}"
        n=$((n + 1))
      done
      [ $n -gt 0 ] || skip "rust $suite" "(all)" "${why:-$probe failed}"
    fi
  done
}

# Every target with the 'testing' feature (tests, benches, examples turn it
# on), then the shipped library alone, without it: there the compiler reports
# internals that nothing but a test uses.
clippy_all() {
  cargo clippy --all-targets -- -D warnings || return 1
  echo "\$ cargo clippy --lib -- -D warnings   # the shipped library, without the testing feature"
  cargo clippy --lib -- -D warnings
}

headers() {
  python3 c-tests/check_headers.py --self-test || return 1
  python3 c-tests/check_headers.py --lib target/release/libramp.so \
    --generated bindings/ramp_gen.h --cargo Cargo.toml \
    --header am.h --header ramp.h --header ramp_spmd.h --header amudp.h --header amudp_spmd.h
}

# The AMUDP headers' compile check, then GASNet's udp-conduit's needs (issue 41).
amudp_checks() {
  bash c-tests/amudp_compile.sh || return 1
  echo
  echo "\$ bash c-tests/gasnet/run.sh"
  bash c-tests/gasnet/run.sh
}

# The legacy ports, then (for the record, not asserted) the job start-up time per launcher.
legacy() {
  bash c-tests/legacy/run.sh || return 1
  echo
  echo "\$ bash scripts/startup-times.sh   # not asserted"
  bash scripts/startup-times.sh || echo "test-all: scripts/startup-times.sh failed (not counted)"
  return 0
}

step 0 prerequisites prerequisites
step 1 fmt cargo fmt --check
step 2 clippy clippy_all
step 3 "rust tests" rust_tests
step 4 build cargo build --release
step 5 headers headers
step 6 "C tests" bash c-tests/run.sh
step 7 "AMUDP headers" amudp_checks
step 8 "legacy AMX ports" legacy
step 9 install bash scripts/test-install.sh
if [ -d python/tests ]; then
  step 10 "python tests" python_tests
else
  banner 10 "python tests"
  echo "test-all: python/tests does not exist; skipped"
  STATUS["python tests"]=skipped
  SECS["python tests"]=0.0
fi

slurm_down
echo
echo "test-all: all steps passed"
summary
