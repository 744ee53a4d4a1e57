#!/usr/bin/env bash
# Every test of ramp, in order; the README's test command and what CI (.ci/run) runs.
#
# Usage: bash scripts/test-all.sh
#
# Steps (each announced with a banner; the first failure stops the run with a message
# naming the step, and the exit status is non-zero):
#   0. prerequisites   on a fresh Debian machine, installs what is missing, by package
#                      name: apt-get install -y pkg-config gcc python3 python3-pip
#                      (apt-get update once first), rustup component add clippy rustfmt,
#                      and pytest with pip when python/tests exists
#   1. fmt             cargo fmt --check
#   2. clippy          cargo clippy --all-targets -- -D warnings
#   3. build           cargo build --release
#   4. rust tests      cargo test --release
#   5. headers         python3 c-tests/check_headers.py --lib target/release/libramp.so
#                        --generated bindings/ramp_gen.h --cargo Cargo.toml
#   6. C tests         bash c-tests/run.sh
#   7. install         bash scripts/test-install.sh
#   8. python tests    python3 -m pytest python/tests (if python/tests exists; "no tests
#                      collected", exit 5, counts as success)
# At the end (or at the failure) it prints one line per step with its status and time.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

case "${1:-}" in
  -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test-all.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
esac

# ---- bookkeeping -----------------------------------------------------------------------
STEPS=(prerequisites fmt clippy build "rust tests" headers "C tests" "AMUDP headers" "legacy AMX ports" install "python tests")
declare -A STATUS=() SECS=()
T_START=""

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
  local t0 rc
  t0="$(now)"
  "$@"
  rc=$?
  SECS[$name]="$(elapsed "$t0" "$(now)")"
  if [ $rc -eq 0 ]; then
    STATUS[$name]=ok
  else
    STATUS[$name]=FAILED
    stop "$name" "'$*' exited with status $rc"
  fi
}

stop() { # stop STEP MESSAGE
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
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test-all: missing: ${missing[*]}"
    apt_install "${missing[@]}" || return 1
  else
    echo "test-all: pkg-config, gcc, python3, pip, binutils, mpich, iproute2: present"
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
  python3 -m pytest python/tests
  local rc=$?
  if [ $rc -eq 5 ]; then
    echo "test-all: pytest collected no tests (exit 5); counted as success"
    return 0
  fi
  return $rc
}

step 0 prerequisites prerequisites
step 1 fmt cargo fmt --check
step 2 clippy cargo clippy --all-targets -- -D warnings
step 3 build cargo build --release
step 4 "rust tests" cargo test --release
step 5 headers python3 c-tests/check_headers.py --lib target/release/libramp.so \
  --generated bindings/ramp_gen.h --cargo Cargo.toml \
  --header am.h --header ramp.h --header ramp_spmd.h --header amudp.h --header amudp_spmd.h
step 6 "C tests" bash c-tests/run.sh
step 7 "AMUDP headers" bash c-tests/amudp_compile.sh
step 8 "legacy AMX ports" bash c-tests/legacy/run.sh
step 9 install bash scripts/test-install.sh
if [ -d python/tests ]; then
  step 10 "python tests" python_tests
else
  banner 10 "python tests"
  echo "test-all: python/tests does not exist; skipped"
  STATUS["python tests"]=skipped
  SECS["python tests"]=0.0
fi

summary
echo
echo "test-all: all steps passed"
