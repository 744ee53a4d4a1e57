#!/usr/bin/env bash
# Test scripts/install.sh the way a user meets the result: install into a temporary
# prefix, then build programs against the installed files only, with pkg-config.
#
# Usage: bash scripts/test-install.sh [--keep] [--no-build]
#   --keep      keep the temporary directory (its path is printed)
#   --no-build  pass --no-build to install.sh (install the existing target/release)
#
# Checks (one PASS/FAIL line each, then "install: N passed, M failed"; exit 1 on any
# failure):
#   - install.sh into a temporary PREFIX: files, symlinks libramp.so -> libramp.so.A ->
#     libramp.so.X.Y.Z, headers, bin/ramp, lib/pkgconfig/ramp.pc
#   - pkg-config reads ramp.pc: version = Cargo.toml's, -I/-L point into the prefix
#   - c-tests/install_smoke.c, copied to app.c, builds with exactly
#       cc app.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs ramp)
#     and runs with LD_LIBRARY_PATH=PREFIX/lib, loading the library from the prefix
#   - readelf -d: the installed library's SONAME is libramp.so.A, the program's NEEDED
#     entry is libramp.so.A (not libramp.so)
#   - the same program linked with an rpath taken from pkg-config's libdir runs without
#     LD_LIBRARY_PATH; linked statically (libramp.a + Libs.private) it runs too
#   - the C example of README.md builds with pkg-config and runs
#   - the installed `ramp` command runs
#   - DESTDIR: a staged install lands under DESTDIR, and its ramp.pc names the final prefix
#   - examples/c/am_pair.c (only <am.h>) builds with exactly
#       cc am_pair.c $(pkg-config --cflags --libs ramp)
#     (and compiles clean with -Wall -Wextra -Werror -std=c11); its two processes see
#     every request and reply of every category exactly once, plainly and again with
#     RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.02 RAMP_FAULT_REORDER=0.05 RAMP_FAULT_SEED=7
#     (timeout 120 s each)
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

KEEP=0
INSTALL_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1; shift ;;
    --no-build) INSTALL_ARGS+=(--no-build); shift ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-install.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

for tool in cc pkg-config readelf; do
  command -v "$tool" >/dev/null 2>&1 || { echo "test-install.sh: '$tool' not found (apt-get install gcc pkg-config binutils)" >&2; exit 2; }
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/ramp-test-install.XXXXXX")" || exit 2
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ "$KEEP" -eq 1 ]; then
    echo "test-install.sh: kept $TMP"
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT

PREFIX="$TMP/prefix"
WORK="$TMP/work"
mkdir -p "$WORK"
PCPATH="$PREFIX/lib/pkgconfig"
VERSION="$(awk '/^\[/ { p = ($0 == "[package]"); next }
                p && /^version[ \t]*=/ { sub(/^[^"]*"/, ""); sub(/".*/, ""); print; exit }' Cargo.toml)"
ABI="$(awk '$1 == "#define" && $2 == "RAMP_ABI_VERSION" { print $3; exit }' include/ramp.h)"
SONAME="libramp.so.$ABI"

PASSED=0
FAILED=0
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() { # fail NAME [LOG]
  echo "FAIL $1"
  FAILED=$((FAILED + 1))
  if [ $# -gt 1 ] && [ -s "$2" ]; then tail -n 30 "$2" | sed 's/^/    | /'; fi
}
finish() {
  echo "install: $PASSED passed, $FAILED failed"
  [ $FAILED -eq 0 ] && exit 0
  exit 1
}
pc() { PKG_CONFIG_PATH="$PCPATH" pkg-config "$@"; }
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'; }

echo "test-install: ramp $VERSION, soname $SONAME, temporary prefix $PREFIX"

# ---- install -------------------------------------------------------------------------
log="$TMP/install.log"
if bash scripts/install.sh "${INSTALL_ARGS[@]}" "$PREFIX" >"$log" 2>&1; then
  pass "install.sh $PREFIX"
else
  fail "install.sh $PREFIX" "$log"
  finish
fi

# ---- files and symlinks ----------------------------------------------------------------
problems=""
for f in "lib/libramp.so.$VERSION" lib/libramp.a include/am.h include/ramp.h bin/ramp \
         lib/pkgconfig/ramp.pc; do
  [ -f "$PREFIX/$f" ] && [ ! -L "$PREFIX/$f" ] || problems="$problems; $f is not a regular file"
done
[ -x "$PREFIX/bin/ramp" ] || problems="$problems; bin/ramp is not executable"
[ "$(readlink "$PREFIX/lib/$SONAME" 2>/dev/null)" = "libramp.so.$VERSION" ] ||
  problems="$problems; lib/$SONAME is not a symlink to libramp.so.$VERSION"
[ "$(readlink "$PREFIX/lib/libramp.so" 2>/dev/null)" = "$SONAME" ] ||
  problems="$problems; lib/libramp.so is not a symlink to $SONAME"
cmp -s include/am.h "$PREFIX/include/am.h" || problems="$problems; include/am.h differs from the source tree"
cmp -s include/ramp.h "$PREFIX/include/ramp.h" || problems="$problems; include/ramp.h differs from the source tree"
if [ -z "$problems" ]; then
  pass "installed files and symlinks (libramp.so -> $SONAME -> libramp.so.$VERSION)"
else
  echo "    | ${problems#; }"
  fail "installed files and symlinks"
fi

# ---- pkg-config ------------------------------------------------------------------------
log="$TMP/pkgconfig.log"
{
  echo "ramp.pc:"; cat "$PCPATH/ramp.pc"
  echo "--modversion: $(pc --modversion ramp 2>&1)"
  echo "--cflags --libs: $(pc --cflags --libs ramp 2>&1)"
  echo "--static --libs: $(pc --static --libs ramp 2>&1)"
} >"$log"
if [ "$(pc --modversion ramp 2>/dev/null)" = "$VERSION" ] &&
   [ "$(pc --variable=prefix ramp 2>/dev/null)" = "$PREFIX" ] &&
   [ "$(pc --cflags ramp 2>/dev/null | xargs)" = "-I$PREFIX/include" ] &&
   [ "$(pc --libs ramp 2>/dev/null | xargs)" = "-L$PREFIX/lib -lramp" ]; then
  pass "pkg-config: ramp $VERSION, $(pc --cflags --libs ramp | xargs)"
else
  fail "pkg-config: expected version $VERSION, -I$PREFIX/include, -L$PREFIX/lib -lramp" "$log"
fi

# ---- build the smoke program exactly as the README says --------------------------------
cp c-tests/install_smoke.c "$WORK/app.c"
log="$TMP/smoke-build.log"
# shellcheck disable=SC2046
if (cd "$WORK" && cc app.c $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags --libs ramp)) >"$log" 2>&1 &&
   [ -x "$WORK/a.out" ]; then
  pass "cc app.c \$(pkg-config --cflags --libs ramp)  [c-tests/install_smoke.c]"
  BUILT=1
else
  fail "cc app.c \$(pkg-config --cflags --libs ramp)  [c-tests/install_smoke.c]" "$log"
  BUILT=0
fi

# ---- soname and NEEDED -------------------------------------------------------------------
got="$(readelf -d "$PREFIX/lib/libramp.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
if [ "$got" = "$SONAME" ]; then
  pass "readelf -d lib/libramp.so.$VERSION: SONAME $got"
else
  fail "readelf -d lib/libramp.so.$VERSION: SONAME is '$got', expected $SONAME"
fi
if [ $BUILT -eq 1 ]; then
  ramp_needed="$(needed "$WORK/a.out" | grep '^libramp' | xargs)"
  if [ "$ramp_needed" = "$SONAME" ]; then
    pass "readelf -d a.out: NEEDED $ramp_needed"
  else
    fail "readelf -d a.out: NEEDED libramp entries are '$ramp_needed', expected $SONAME"
  fi
fi

# ---- run with LD_LIBRARY_PATH ------------------------------------------------------------
if [ $BUILT -eq 1 ]; then
  log="$TMP/smoke-run.log"
  loaded="$(LD_LIBRARY_PATH="$PREFIX/lib" ldd "$WORK/a.out" 2>/dev/null | awk '$1 ~ /^libramp/ { print $3 }')"
  if (cd "$WORK" && LD_LIBRARY_PATH="$PREFIX/lib" timeout 60 ./a.out "$VERSION") >"$log" 2>&1 &&
     [ "$loaded" = "$PREFIX/lib/$SONAME" ]; then
    sed 's/^/    /' "$log"
    pass "LD_LIBRARY_PATH=PREFIX/lib ./a.out (loads $loaded)"
  else
    echo "    | ldd resolved libramp to: ${loaded:-nothing}" >>"$log"
    fail "LD_LIBRARY_PATH=PREFIX/lib ./a.out" "$log"
  fi
fi

# ---- rpath from pkg-config's libdir --------------------------------------------------------
log="$TMP/rpath.log"
libdir="$(pc --variable=libdir ramp)"
# shellcheck disable=SC2046
if (cd "$WORK" && cc app.c -o app-rpath $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags --libs ramp) \
      -Wl,-rpath,"$libdir" && env -u LD_LIBRARY_PATH timeout 60 ./app-rpath "$VERSION") >"$log" 2>&1; then
  pass "rpath from pkg-config --variable=libdir: runs without LD_LIBRARY_PATH"
else
  fail "rpath from pkg-config --variable=libdir" "$log"
fi

# ---- static: libramp.a with Libs.private -------------------------------------------------------
log="$TMP/static.log"
static_libs="$(pc --static --libs ramp | sed 's/-lramp\b/-l:libramp.a/')"
# shellcheck disable=SC2046,SC2086
if (cd "$WORK" && cc app.c -o app-static $(pc --cflags ramp) $static_libs &&
      env -u LD_LIBRARY_PATH timeout 60 ./app-static "$VERSION") >"$log" 2>&1 &&
   ! needed "$WORK/app-static" | grep -q '^libramp'; then
  pass "static link: cc app.c \$(pkg-config --cflags ramp) $(echo "$static_libs" | sed "s|$PREFIX|PREFIX|g" | xargs)"
else
  fail "static link with libramp.a and Libs.private" "$log"
fi

# ---- the README's C example --------------------------------------------------------------------
log="$TMP/readme-example.log"
awk '/^```c[ \t]*$/ { if (!done) { inblock = 1; next } }
     inblock && /^```/ { inblock = 0; done = 1; next }
     inblock { print }' README.md >"$WORK/readme_example.c" 2>/dev/null
if [ ! -s "$WORK/readme_example.c" ]; then
  fail "README.md C example: no \`\`\`c block found in README.md"
else
  # shellcheck disable=SC2046
  if (cd "$WORK" && cc -Wall -Wextra -Werror readme_example.c -o readme_example \
        $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags --libs ramp) &&
        LD_LIBRARY_PATH="$PREFIX/lib" timeout 60 ./readme_example) >"$log" 2>&1; then
    sed 's/^/    /' "$log"
    pass "README.md C example builds with pkg-config (-Wall -Wextra -Werror) and runs"
  else
    fail "README.md C example" "$log"
  fi
fi

# ---- the installed command ---------------------------------------------------------------------
log="$TMP/bin.log"
if env -u LD_LIBRARY_PATH timeout 30 "$PREFIX/bin/ramp" --help >"$log" 2>&1; then
  pass "bin/ramp --help"
else
  fail "bin/ramp --help" "$log"
fi

# ---- DESTDIR ------------------------------------------------------------------------------------
log="$TMP/destdir.log"
STAGE="$TMP/stage"
FINAL="/opt/ramp-test-install-$$"
if [ -e "$FINAL" ]; then
  fail "DESTDIR: $FINAL already exists; cannot check that nothing is written there"
elif DESTDIR="$STAGE" bash scripts/install.sh --no-build "$FINAL" >"$log" 2>&1 &&
     [ -f "$STAGE$FINAL/lib/libramp.so.$VERSION" ] && [ -L "$STAGE$FINAL/lib/$SONAME" ] &&
     [ -L "$STAGE$FINAL/lib/libramp.so" ] && [ -f "$STAGE$FINAL/lib/libramp.a" ] &&
     [ -f "$STAGE$FINAL/include/am.h" ] && [ -f "$STAGE$FINAL/include/ramp.h" ] &&
     [ -x "$STAGE$FINAL/bin/ramp" ] &&
     grep -qx "prefix=$FINAL" "$STAGE$FINAL/lib/pkgconfig/ramp.pc" &&
     ! grep -q "$STAGE" "$STAGE$FINAL/lib/pkgconfig/ramp.pc" &&
     [ ! -e "$FINAL" ]; then
  pass "DESTDIR=STAGE install.sh $FINAL: files under STAGE, ramp.pc says prefix=$FINAL"
else
  { echo "staged files:"; find "$STAGE" 2>/dev/null | sed "s|$STAGE||"; } >>"$log"
  fail "DESTDIR staged install" "$log"
  rm -rf "$FINAL" 2>/dev/null
fi

# ---- examples/c/am_pair.c: two processes, every category, exactly once (also under loss) ----
PAIR="$TMP/pair"
mkdir -p "$PAIR"
cp examples/c/am_pair.c "$PAIR/am_pair.c"
log="$TMP/am_pair-build.log"
# shellcheck disable=SC2046
if (cd "$PAIR" && cc am_pair.c $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags --libs ramp)) >"$log" 2>&1 &&
   [ -x "$PAIR/a.out" ]; then
  pass "cc am_pair.c \$(pkg-config --cflags --libs ramp)  [examples/c/am_pair.c]"
  PAIR_BUILT=1
else
  fail "cc am_pair.c \$(pkg-config --cflags --libs ramp)  [examples/c/am_pair.c]" "$log"
  PAIR_BUILT=0
fi
log="$TMP/am_pair-strict.log"
# shellcheck disable=SC2046
if (cd "$PAIR" && cc -Wall -Wextra -Werror -std=c11 -fsyntax-only am_pair.c \
      $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags ramp)) >"$log" 2>&1; then
  pass "am_pair.c compiles clean with -Wall -Wextra -Werror -std=c11"
else
  fail "am_pair.c compiles clean with -Wall -Wextra -Werror -std=c11" "$log"
fi
# run_pair LABEL LOG [VAR=VALUE ...]: runs the built am_pair with the given environment
run_pair() {
  local label="$1" plog="$2" rc
  shift 2
  (cd "$PAIR" && env LD_LIBRARY_PATH="$PREFIX/lib" "$@" timeout 120 ./a.out) >"$plog" 2>&1
  rc=$?
  [ $rc -eq 124 ] && echo "    | timed out after 120 s" >>"$plog"
  if [ $rc -eq 0 ]; then
    sed 's/^/    /' "$plog"
    pass "$label"
  else
    echo "    | exit status $rc" >>"$plog"
    fail "$label" "$plog"
  fi
}
if [ $PAIR_BUILT -eq 1 ]; then
  run_pair "am_pair: two processes, every request and reply exactly once" "$TMP/am_pair-run.log"
  run_pair "am_pair: two processes, every request and reply exactly once with 5% loss (RAMP_FAULT_LOSS=0.05 DUP=0.02 REORDER=0.05 SEED=7)" \
    "$TMP/am_pair-loss.log" \
    RAMP_FAULT_LOSS=0.05 RAMP_FAULT_DUP=0.02 RAMP_FAULT_REORDER=0.05 RAMP_FAULT_SEED=7
fi

# ---- examples/c/histogram.c: an SPMD job built against the install, run by its ramp-run ----
HIST="$TMP/hist"
mkdir -p "$HIST"
cp examples/c/histogram.c "$HIST/histogram.c"
log="$TMP/histogram.log"
# shellcheck disable=SC2046
if (cd "$HIST" && cc -Wall -Wextra -Werror -std=c11 histogram.c \
      $(PKG_CONFIG_PATH="$PCPATH" pkg-config --cflags --libs ramp) -o histogram) >"$log" 2>&1 &&
   (cd "$HIST" && LD_LIBRARY_PATH="$PREFIX/lib" timeout 120 "$PREFIX/bin/ramp-run" -n 4 ./histogram 20000) >>"$log" 2>&1 &&
   grep -q "total 80000 of 80000: OK" "$log"; then
  pass "examples/c/histogram.c: built with pkg-config, PREFIX/bin/ramp-run -n 4: every value counted once"
else
  fail "examples/c/histogram.c: built with pkg-config, PREFIX/bin/ramp-run -n 4: every value counted once" "$log"
fi

# In-tree: a program linked against the build directory itself, as a developer
# would before installing (build.rs puts libramp.so.0 beside libramp.so there).
log="$TMP/in-tree.log"
INTREE="$TMP/in-tree"
mkdir -p "$INTREE"
if cc -I"$ROOT/include" "$ROOT/examples/c/am_pair.c" -L"$ROOT/target/release" -lramp \
      -o "$INTREE/am_pair" >"$log" 2>&1 &&
   (cd "$INTREE" && LD_LIBRARY_PATH="$ROOT/target/release" timeout 120 ./am_pair) >>"$log" 2>&1; then
  pass "in-tree: cc -Iinclude am_pair.c -Ltarget/release -lramp runs with LD_LIBRARY_PATH=target/release"
else
  fail "in-tree: cc -Iinclude am_pair.c -Ltarget/release -lramp runs with LD_LIBRARY_PATH=target/release" "$log"
fi

finish
