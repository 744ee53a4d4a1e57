#!/usr/bin/env bash
# Install ramp: the shared and static library, the headers, the `ramp` command and a
# pkg-config file.
#
# Usage: scripts/install.sh [--no-build] [PREFIX]        (PREFIX default: /usr/local)
#        DESTDIR=/tmp/stage scripts/install.sh /usr       (staged install, for packaging)
#
#   --no-build  install what target/release holds; do not run cargo
#
# Installs, under $DESTDIR$PREFIX:
#   lib/libramp.so.X.Y.Z    the shared library (X.Y.Z: version in Cargo.toml)
#   lib/libramp.so.A        -> libramp.so.X.Y.Z (A: the ABI version, the soname)
#   lib/libramp.so          -> libramp.so.A     (what -lramp finds at link time)
#   lib/libramp.a           the static library
#   lib/pkgconfig/ramp.pc   made from scripts/ramp.pc.in, with prefix=$PREFIX
#   include/am.h, include/ramp.h
#   bin/ramp
# Programs build with:  cc app.c $(pkg-config --cflags --libs ramp)
#
# Building: unless --no-build, runs `cargo build --release` first (a no-op when the
# build is up to date); it runs with --offline when every dependency is already in
# cargo's cache, so an install never needs the network after one build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD=1
PREFIX=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install.sh: unknown option: $1" >&2; exit 2 ;;
    *)
      [ -z "$PREFIX" ] || { echo "install.sh: only one PREFIX may be given" >&2; exit 2; }
      PREFIX="$1"; shift ;;
  esac
done
PREFIX="${PREFIX:-/usr/local}"
case "$PREFIX" in
  /*) ;;
  *) echo "install.sh: PREFIX must be an absolute path (got: $PREFIX)" >&2; exit 2 ;;
esac
PREFIX="${PREFIX%/}"
[ -n "$PREFIX" ] || PREFIX="/"
DESTDIR="${DESTDIR:-}"
DESTDIR="${DESTDIR%/}"

die() { echo "install.sh: $*" >&2; exit 1; }

# ---- what to install ---------------------------------------------------------------
# [package] fields of Cargo.toml: version and description
cargo_field() {
  awk -v key="$1" '
    /^\[/ { in_pkg = ($0 == "[package]"); next }
    in_pkg && $0 ~ "^" key "[ \t]*=" {
      sub(/^[^=]*=[ \t]*"/, ""); sub(/"[ \t]*(#.*)?$/, ""); print; exit
    }' Cargo.toml
}
VERSION="$(cargo_field version)"
DESCRIPTION="$(cargo_field description)"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read version = \"X.Y.Z\" from Cargo.toml (got: '$VERSION')"
[ -n "$DESCRIPTION" ] || DESCRIPTION="Reliable Active Messages (AM-2) over UDP"

ABI="$(awk '$1 == "#define" && $2 == "RAMP_ABI_VERSION" { print $3; exit }' include/ramp.h)"
[[ "$ABI" =~ ^[0-9]+$ ]] || die "cannot read RAMP_ABI_VERSION from include/ramp.h"

# ---- build -------------------------------------------------------------------------
REL="target/release"
if [ $BUILD -eq 1 ]; then
  if command -v cargo >/dev/null 2>&1; then
    if cargo metadata --offline --format-version 1 >/dev/null 2>&1; then
      echo "install.sh: cargo build --release --offline"
      cargo build --release --offline
    else
      echo "install.sh: dependencies are not all in cargo's cache; cargo build --release will fetch them"
      cargo build --release
    fi
  elif [ -e "$REL/libramp.so" ] && [ -e "$REL/libramp.a" ] && [ -e "$REL/ramp" ]; then
    echo "install.sh: cargo not found (e.g. under sudo); installing the existing build in $REL" >&2
  else
    die "cargo not found and $REL holds no build; run 'cargo build --release' first"
  fi
fi
for f in "$REL/libramp.so" "$REL/libramp.a" "$REL/ramp" "$REL/ramp-run" include/am.h include/ramp.h \
         include/ramp_spmd.h include/amudp.h include/amudp_spmd.h include/amudp_const.h scripts/ramp.pc.in; do
  [ -e "$f" ] || die "$f is missing (run 'cargo build --release')"
done

# The soname recorded in the library must be libramp.so.$ABI.
SONAME="libramp.so.$ABI"
if command -v readelf >/dev/null 2>&1; then
  got="$(readelf -d "$REL/libramp.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
  [ "$got" = "$SONAME" ] || die "$REL/libramp.so has soname '$got', expected '$SONAME' (RAMP_ABI_VERSION in include/ramp.h)"
fi

# ---- install -----------------------------------------------------------------------
D="$DESTDIR$PREFIX"
[ "$PREFIX" = "/" ] && D="$DESTDIR"
LIB="$D/lib"
INC="$D/include"
BIN="$D/bin"
PC="$LIB/pkgconfig"
REALNAME="libramp.so.$VERSION"

install -d -m 0755 "$LIB" "$INC" "$BIN" "$PC"

# The shared library: write under a temporary name, then rename, so a program running
# from this prefix never sees a half-written file.
install -m 0755 "$REL/libramp.so" "$LIB/.$REALNAME.tmp"
mv -f "$LIB/.$REALNAME.tmp" "$LIB/$REALNAME"
ln -sfn "$REALNAME" "$LIB/$SONAME"
ln -sfn "$SONAME" "$LIB/libramp.so"
install -m 0644 "$REL/libramp.a" "$LIB/libramp.a"

for h in am.h ramp.h ramp_spmd.h amudp.h amudp_spmd.h amudp_const.h; do
  install -m 0644 "include/$h" "$INC/$h"
done

for b in ramp ramp-run; do
  install -m 0755 "$REL/$b" "$BIN/.$b.tmp"
  mv -f "$BIN/.$b.tmp" "$BIN/$b"
done

# pkg-config file: the prefix is the final one, without DESTDIR.
sed_escape() { printf '%s' "$1" | sed -e 's/[\\|&]/\\&/g'; }
sed -e "s|@PREFIX@|$(sed_escape "$PREFIX")|g" \
    -e "s|@VERSION@|$(sed_escape "$VERSION")|g" \
    -e "s|@DESCRIPTION@|$(sed_escape "$DESCRIPTION")|g" \
    scripts/ramp.pc.in >"$PC/ramp.pc.tmp"
if grep -q '@[A-Z_]*@' "$PC/ramp.pc.tmp"; then
  rm -f "$PC/ramp.pc.tmp"
  die "scripts/ramp.pc.in has a placeholder this script does not fill"
fi
chmod 0644 "$PC/ramp.pc.tmp"
mv -f "$PC/ramp.pc.tmp" "$PC/ramp.pc"

echo "install.sh: installed ramp $VERSION (soname $SONAME) into ${DESTDIR:+$DESTDIR}$PREFIX:"
for f in "$LIB/$REALNAME" "$LIB/$SONAME" "$LIB/libramp.so" "$LIB/libramp.a" \
         "$INC/am.h" "$INC/ramp.h" "$INC/ramp_spmd.h" "$INC/amudp.h" "$INC/amudp_spmd.h" "$INC/amudp_const.h" \
         "$BIN/ramp" "$BIN/ramp-run" "$PC/ramp.pc"; do
  if [ -L "$f" ]; then
    echo "  $f -> $(readlink "$f")"
  else
    echo "  $f"
  fi
done

# Refresh the runtime linker's cache for a real (not staged) install into a directory
# it searches by default; elsewhere, say how programs find the library.
if [ -z "$DESTDIR" ]; then
  case "$PREFIX" in
    /usr|/usr/local)
      if [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null 2>&1; then
        ldconfig || echo "install.sh: ldconfig failed (programs may need LD_LIBRARY_PATH=$LIB)" >&2
      fi
      ;;
    *)
      echo "install.sh: to run programs linked with -lramp, use LD_LIBRARY_PATH=$LIB (or link with -Wl,-rpath,$LIB)"
      echo "install.sh: to build them, PKG_CONFIG_PATH=$PC pkg-config --cflags --libs ramp"
      ;;
  esac
fi
