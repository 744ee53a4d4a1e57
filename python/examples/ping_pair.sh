#!/usr/bin/env bash
# ping_pair.sh -- the ping pair: the C ping (python/examples/c/ping.c) and the Python
# ping (python/examples/ping.py) on 2 ranks, one after the other, RUNS times (default 3);
# prints each short round trip and the medians: C, Python and the difference (what the
# Python layer adds per round trip).
#
#   bash python/examples/ping_pair.sh [--runs N] [--iters N] [--warmup N] [--no-pin]
#                                     [--python-dir DIR] [--python PYTHON] [--floor]
#                                     [--plain] [--versus DIR]
#
# Needs target/release/{libramp.so,ramp-run} (cargo build --release) and a C compiler.
# Each rank is pinned to its own CPU with taskset when there are 2 CPUs or more
# (RAMP_SPMD_RANK modulo the CPU count), unless --no-pin.  The alternation C, Python,
# C, Python... spreads the machine's load over both.  --python-dir runs the ramp
# package found in DIR (e.g. an older version, to compare) instead of this tree's;
# --python the interpreter PYTHON (default: python3 on PATH; e.g. /usr/bin/python3).
# --floor also runs, in each round, c/drain_ping.c (the C library on the Python
# package's path: ramp_DrainOn, ramp_DrainReply1) and raw_ping.py (those calls from
# Python through ctypes with nothing else: the floor of any ctypes-based layer) and
# raw_ping.py --keep-gil (the same, every call keeping the GIL: the floor without the
# GIL's release and re-acquisition), and prints their medians and differences to C
# too.  --plain also runs, in each round, ping.py --plain (the reply awaited with a
# loop of ep.poll(), the loop a new user writes first) and prints its median and
# difference to C; with --floor also raw_ping.py --plain (its floor).  --versus DIR
# also runs, in each round, ping.py (and ping.py --plain with --plain) with the package
# found in DIR, and prints its medians and the difference: an A/B of two packages in
# the same rounds, the machine's swings shared.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RUNS=3
ITERS=5000
WARMUP=500
PIN=1
PYDIR="$ROOT/python"
FLOOR=0
PY=python3
PLAIN=0
VERSUS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="${2:?}"; shift 2 ;;
    --iters) ITERS="${2:?}"; shift 2 ;;
    --warmup) WARMUP="${2:?}"; shift 2 ;;
    --no-pin) PIN=0; shift ;;
    --python-dir) PYDIR="${2:?}"; shift 2 ;;
    --python) PY="${2:?}"; shift 2 ;;
    --floor) FLOOR=1; shift ;;
    --plain) PLAIN=1; shift ;;
    --versus) VERSUS="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "ping_pair.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

REL="$ROOT/target/release"
RUN="$REL/ramp-run"
command -v "$PY" >/dev/null || { echo "ping_pair.sh: no interpreter $PY" >&2; exit 2; }
if [ -n "$VERSUS" ] && [ ! -f "$VERSUS/ramp/__init__.py" ]; then
  echo "ping_pair.sh: --versus $VERSUS: no ramp package there ($VERSUS/ramp/__init__.py)" >&2
  exit 2
fi
for f in "$REL/libramp.so" "$RUN"; do
  [ -e "$f" ] || { echo "ping_pair.sh: $f missing: run cargo build --release" >&2; exit 2; }
done
export RAMP_LIB="${RAMP_LIB:-$REL/libramp.so}"
export PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"${CC:-cc}" -O2 -std=c11 "$HERE/c/ping.c" -I "$ROOT/include" -L "$REL" -lramp \
  -Wl,-rpath,"$REL" -o "$TMP/ping_c" || { echo "ping_pair.sh: cannot build ping.c" >&2; exit 2; }
if [ "$FLOOR" = 1 ]; then
  "${CC:-cc}" -O2 -std=c11 "$HERE/c/drain_ping.c" -I "$ROOT/include" -L "$REL" -lramp \
    -Wl,-rpath,"$REL" -o "$TMP/drain_ping" || { echo "ping_pair.sh: cannot build drain_ping.c" >&2; exit 2; }
fi

NCPU="$(nproc 2>/dev/null || echo 1)"
# the per-rank wrapper: pins rank r to CPU r mod NCPU
cat >"$TMP/pin.sh" <<EOF
#!/usr/bin/env bash
if [ "$PIN" = 1 ] && [ "$NCPU" -ge 2 ] && command -v taskset >/dev/null; then
  exec taskset -c \$(( \${RAMP_SPMD_RANK:-0} % $NCPU )) "\$@"
fi
exec "\$@"
EOF
chmod +x "$TMP/pin.sh"

# one job; prints the median short round trip in us (the program's summary line)
one() {
  local out
  out="$("$RUN" -n 2 "$TMP/pin.sh" "$@" --iters "$ITERS" --warmup "$WARMUP" 2>&1)" || {
    echo "ping_pair.sh: job failed: $*" >&2
    echo "$out" >&2
    return 1
  }
  echo "$out" | sed -n 's/^ping: [a-z-]* short round-trip median \([0-9.]*\) us.*/\1/p'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "ping_pair: Python $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)'), package $PYDIR"
CS=()
PS=()
DS=()
RS=()
KS=()
LS=()
WS=()
VS=()
VLS=()
for r in $(seq 1 "$RUNS"); do
  c="$(one "$TMP/ping_c")" || exit 1
  p="$(one "$PY" "$HERE/ping.py")" || exit 1
  printf 'ping_pair: run %d: C %8.2f us   Python %8.2f us   difference %+.2f us\n' \
    "$r" "$c" "$p" "$(awk -v a="$p" -v b="$c" 'BEGIN { print a - b }')"
  CS+=("$c")
  PS+=("$p")
  if [ "$FLOOR" = 1 ]; then
    d="$(one "$TMP/drain_ping")" || exit 1
    w="$(one "$PY" "$HERE/raw_ping.py")" || exit 1
    k="$(one "$PY" "$HERE/raw_ping.py" --keep-gil)" || exit 1
    printf 'ping_pair: run %d: C drain %8.2f us   raw Python %8.2f us (the floor)   GIL kept %8.2f us\n' \
      "$r" "$d" "$w" "$k"
    DS+=("$d")
    RS+=("$w")
    KS+=("$k")
  fi
  if [ "$PLAIN" = 1 ]; then
    l="$(one "$PY" "$HERE/ping.py" --plain)" || exit 1
    printf 'ping_pair: run %d: Python plain loop %8.2f us   difference %+.2f us\n' \
      "$r" "$l" "$(awk -v a="$l" -v b="$c" 'BEGIN { print a - b }')"
    LS+=("$l")
    if [ "$FLOOR" = 1 ]; then
      w="$(one "$PY" "$HERE/raw_ping.py" --plain)" || exit 1
      printf 'ping_pair: run %d: raw Python plain loop %8.2f us (its floor)\n' "$r" "$w"
      WS+=("$w")
    fi
  fi
  if [ -n "$VERSUS" ]; then
    v="$(PYTHONPATH="$VERSUS${PYTHONPATH:+:$PYTHONPATH}" one "$PY" "$HERE/ping.py")" || exit 1
    printf 'ping_pair: run %d: Python (versus package) %8.2f us\n' "$r" "$v"
    VS+=("$v")
    if [ "$PLAIN" = 1 ]; then
      v="$(PYTHONPATH="$VERSUS${PYTHONPATH:+:$PYTHONPATH}" one "$PY" "$HERE/ping.py" --plain)" || exit 1
      printf 'ping_pair: run %d: Python plain loop (versus package) %8.2f us\n' "$r" "$v"
      VLS+=("$v")
    fi
  fi
done
cm="$(printf '%s\n' "${CS[@]}" | median)"
pm="$(printf '%s\n' "${PS[@]}" | median)"
printf 'ping_pair: medians of %d runs (%d round trips each, pinned: %s): C %.2f us, Python %.2f us, difference %+.2f us\n' \
  "$RUNS" "$ITERS" "$([ "$PIN" = 1 ] && [ "$NCPU" -ge 2 ] && echo yes || echo no)" \
  "$cm" "$pm" "$(awk -v a="$pm" -v b="$cm" 'BEGIN { print a - b }')"
if [ "$FLOOR" = 1 ]; then
  dm="$(printf '%s\n' "${DS[@]}" | median)"
  rm_="$(printf '%s\n' "${RS[@]}" | median)"
  printf 'ping_pair: floor: C drain %.2f us (%+.2f us to C), raw Python %.2f us (%+.2f us to C): the package adds %+.2f us to the raw floor\n' \
    "$dm" "$(awk -v a="$dm" -v b="$cm" 'BEGIN { print a - b }')" \
    "$rm_" "$(awk -v a="$rm_" -v b="$cm" 'BEGIN { print a - b }')" \
    "$(awk -v a="$pm" -v b="$rm_" 'BEGIN { print a - b }')"
  km="$(printf '%s\n' "${KS[@]}" | median)"
  printf 'ping_pair: floor with the GIL kept in every call: raw Python %.2f us (%+.2f us to C; the GIL costs %+.2f us)\n' \
    "$km" "$(awk -v a="$km" -v b="$cm" 'BEGIN { print a - b }')" \
    "$(awk -v a="$rm_" -v b="$km" 'BEGIN { print a - b }')"
fi
if [ "$PLAIN" = 1 ]; then
  lm="$(printf '%s\n' "${LS[@]}" | median)"
  printf 'ping_pair: plain loop (ep.poll()): Python %.2f us, difference %+.2f us to C\n' \
    "$lm" "$(awk -v a="$lm" -v b="$cm" 'BEGIN { print a - b }')"
  if [ "$FLOOR" = 1 ]; then
    wm="$(printf '%s\n' "${WS[@]}" | median)"
    printf 'ping_pair: plain loop floor: raw Python %.2f us (%+.2f us to C): the package adds %+.2f us to it\n' \
      "$wm" "$(awk -v a="$wm" -v b="$cm" 'BEGIN { print a - b }')" \
      "$(awk -v a="$lm" -v b="$wm" 'BEGIN { print a - b }')"
  fi
fi
if [ -n "$VERSUS" ]; then
  vm="$(printf '%s\n' "${VS[@]}" | median)"
  printf 'ping_pair: versus %s: Python %.2f us (%+.2f us to C); this package %+.2f us to it\n' \
    "$VERSUS" "$vm" "$(awk -v a="$vm" -v b="$cm" 'BEGIN { print a - b }')" \
    "$(awk -v a="$pm" -v b="$vm" 'BEGIN { print a - b }')"
  if [ "$PLAIN" = 1 ]; then
    vlm="$(printf '%s\n' "${VLS[@]}" | median)"
    printf 'ping_pair: versus %s: plain loop %.2f us (%+.2f us to C); this package %+.2f us to it\n' \
      "$VERSUS" "$vlm" "$(awk -v a="$vlm" -v b="$cm" 'BEGIN { print a - b }')" \
      "$(awk -v a="$lm" -v b="$vlm" 'BEGIN { print a - b }')"
  fi
fi
