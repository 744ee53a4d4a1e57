#!/usr/bin/env bash
# Compile check of the AMUDP drop-in headers (include/amudp.h, include/amudp_spmd.h).
#
# Usage: bash c-tests/amudp_compile.sh [--lib-dir DIR]
#   --lib-dir DIR  directory holding libramp.so (default: target/release); when it is
#                  there, each C and C++ object is also linked against it (never run),
#                  so every name the headers map to must exist in the library.
#
# Compiles c-tests/amudp_compile.c with -Wall -Wextra -Werror as C11 (gcc -std=c11) and
# as C++ (g++ -x c++ -std=c++17) in every build mode the headers accept: -DAMUDP
# -DAMX_NDEBUG, -DAMUDP_DEBUG, -DAMUDP_NDEBUG, -DAMX_DEBUG, -DGASNET_DEBUG,
# -DGASNET_NDEBUG, nothing defined (ramp's default: NDEBUG), and with
# -DAMUDP_DEBUG_VERBOSE.  Then checks that the headers refuse what they must refuse
# (AMUDP_DEBUG together with AMUDP_NDEBUG; AMUDP_COEXIST_WITH_AM) with an #error.
# Prints "amudp headers: N passed, M failed"; exit status 1 on any failure.
# Logs: c-tests/build/amudp_compile.*.log.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

LIB_DIR="target/release"
while [ $# -gt 0 ]; do
  case "$1" in
    --lib-dir) LIB_DIR="${2:?--lib-dir needs a directory}"; shift 2 ;;
    --lib-dir=*) LIB_DIR="${1#--lib-dir=}"; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "amudp_compile.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

CC="${CC:-gcc}"
CXX="${CXX:-g++}"
SRC="c-tests/amudp_compile.c"
BUILD="c-tests/build"
mkdir -p "$BUILD"
LINK=0
if [ -e "$LIB_DIR/libramp.so" ]; then
  LINK=1
else
  echo "amudp_compile.sh: $LIB_DIR/libramp.so not found: compiling only, not linking"
fi

WARN="-Wall -Wextra -Werror"
PASSED=0
FAILED=0

result() { # result OK? LABEL LOG
  if [ "$1" = 0 ]; then
    printf 'PASS %s\n' "$2"
    PASSED=$((PASSED + 1))
  else
    printf 'FAIL %s\n' "$2"
    FAILED=$((FAILED + 1))
    [ -s "$3" ] && tail -n 20 "$3" | sed 's/^/    | /'
  fi
}

# compile_ok NAME EXPECT_DEBUG EXPECT_VERBOSE FLAGS...: C11 and C++, compile (+ link)
compile_ok() {
  local name="$1" dbg="$2" verb="$3"
  shift 3
  local lang cmd obj log rc
  for lang in c c++; do
    obj="$BUILD/amudp_compile.$name.$lang.o"
    log="$BUILD/amudp_compile.$name.$lang.log"
    if [ "$lang" = c ]; then
      cmd=("$CC" -std=c11)
    else
      cmd=("$CXX" -x c++ -std=c++17)
    fi
    "${cmd[@]}" $WARN -Iinclude -DEXPECT_DEBUG="$dbg" -DEXPECT_VERBOSE="$verb" "$@" \
      -c "$SRC" -o "$obj" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ $LINK = 1 ]; then
      if [ "$lang" = c ]; then
        "$CC" "$obj" -L"$LIB_DIR" -lramp -o "${obj%.o}" >>"$log" 2>&1
      else
        "$CXX" "$obj" -L"$LIB_DIR" -lramp -o "${obj%.o}" >>"$log" 2>&1
      fi
      rc=$?
    fi
    result $rc "$lang: ${*:-(nothing defined)}$([ $LINK = 1 ] && echo ' (compiled and linked)')" "$log"
  done
}

# compile_fails NAME WHAT FLAGS...: must stop with an #error mentioning WHAT
compile_fails() {
  local name="$1" what="$2"
  shift 2
  local lang cmd log rc
  for lang in c c++; do
    log="$BUILD/amudp_compile.$name.$lang.log"
    if [ "$lang" = c ]; then
      cmd=("$CC" -std=c11)
    else
      cmd=("$CXX" -x c++ -std=c++17)
    fi
    "${cmd[@]}" $WARN -Iinclude "$@" -fsyntax-only "$SRC" >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && grep -q "#error.*$what" "$log"; then rc=0; else rc=1; fi
    result $rc "$lang: $* is refused ($what)" "$log"
  done
}

compile_ok amx_ndebug     0 0 -DAMUDP -DAMX_NDEBUG
compile_ok amudp_debug    1 0 -DAMUDP_DEBUG
compile_ok none           0 0
compile_ok amudp_ndebug   0 0 -DAMUDP -DAMUDP_NDEBUG
compile_ok amx_debug      1 0 -DAMUDP -DAMX_DEBUG
compile_ok gasnet_debug   1 0 -DGASNET_DEBUG
compile_ok gasnet_ndebug  0 0 -DGASNET_NDEBUG
compile_ok debug_verbose  1 1 -DAMUDP -DAMX_DEBUG -DAMUDP_DEBUG_VERBOSE
compile_ok verbose_zero   0 0 -DAMX_DEBUG_VERBOSE=0
compile_ok optimized      0 0 -DAMUDP -DAMX_NDEBUG -O2 -DNDEBUG
compile_fails both_modes  "AMUDP_DEBUG and AMUDP_NDEBUG" -DAMUDP_DEBUG -DAMUDP_NDEBUG
compile_fails coexist     "AMUDP_COEXIST_WITH_AM" -DAMUDP_COEXIST_WITH_AM

echo "amudp headers: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
