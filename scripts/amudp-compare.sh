#!/usr/bin/env bash
# amudp-compare.sh -- GASNet's own AMX test programs (testping, testbulk, testlatency),
# unchanged, built once against GASNet's AMUDP and once against ramp's include/amudp.h
# and libramp.so, run interleaved; prints each run's figure and the medians, ramp over
# its default transport (shared memory between same-host ranks) and over UDP
# (RAMP_TRANSPORT=udp), with their ratios to AMUDP. Beside testbulk, in the same
# interleaving, the floors of a UDP stream on this host (scripts/udp-floor.c, the same
# bytes in 65,000-byte datagrams): the kernel's work alone, and with the copies AMUDP
# makes; what ramp over UDP may reach is read against them. Likewise the floors of the
# same messages between two processes through shared memory (scripts/shm-floor.c): one
# copy each end through a ring, and the copy split between the processes with the
# kernel's cross-memory calls (as ramp's direct Xfer); ramp over shm is read against them.
#
#   bash scripts/amudp-compare.sh --amudp-bin DIR --amx-src DIR [--runs N] [--quick]
#
#   --amudp-bin DIR  testping, testbulk and testlatency built against AMUDP
#                    (GASNet's other/amudp, Makefile.standalone, and other/amx's tests)
#   --amx-src DIR    GASNet's other/ directory: amx/test*.c and amx/apputils.c are
#                    compiled here against ramp's headers; amx/*.h and the platform
#                    header amx_portable_platform.h (a copy of gasnet_portable_platform.h,
#                    as GASNet's Makefile makes it) are looked for in DIR, DIR/amx and
#                    --amx-include DIR
#   --runs N         runs of each program and library (default 5), interleaved
#   --quick          fewer iterations (a smoke run)
#
# GASNet is not part of ramp and is not fetched by this script: point it at a build.
# Needs target/release/libramp.so (cargo build --release) and a C compiler.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AMUDP_BIN=""
AMX_SRC=""
AMX_INC=""
RUNS=5
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --amudp-bin) AMUDP_BIN="${2:?}"; shift 2 ;;
    --amx-src) AMX_SRC="${2:?}"; shift 2 ;;
    --amx-include) AMX_INC="${2:?}"; shift 2 ;;
    --runs) RUNS="${2:?}"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "amudp-compare.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
die() { echo "amudp-compare.sh: $*" >&2; exit 2; }
[ -n "$AMUDP_BIN" ] && [ -n "$AMX_SRC" ] || die "--amudp-bin and --amx-src are required (--help)"
case "$RUNS" in ''|*[!0-9]*|0) die "--runs must be a positive integer" ;; esac
REL="$ROOT/target/release"
[ -e "$REL/libramp.so" ] || die "$REL/libramp.so missing: run cargo build --release"
for t in testping testbulk testlatency; do
  [ -x "$AMUDP_BIN/$t" ] || die "$AMUDP_BIN/$t is not an executable"
  [ -f "$AMX_SRC/amx/$t.c" ] || die "$AMX_SRC/amx/$t.c not found"
done

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
INCS=(-I "$ROOT/include" -I "$AMX_SRC/amx" -I "$AMX_SRC")
[ -n "$AMX_INC" ] && INCS+=(-I "$AMX_INC")
for t in testping testbulk testlatency; do
  "${CC:-cc}" -O2 -DAMUDP -DAMX_NDEBUG -DNDEBUG -D_GNU_SOURCE=1 "${INCS[@]}" \
    -o "$TMP/$t" "$AMX_SRC/amx/$t.c" "$AMX_SRC/amx/apputils.c" \
    -L "$REL" -lramp -Wl,-rpath,"$REL" >"$TMP/cc.log" 2>&1 ||
    { cat "$TMP/cc.log" >&2; die "cannot build $t against ramp's headers"; }
done
"${CC:-cc}" -O2 -o "$TMP/udp-floor" "$ROOT/scripts/udp-floor.c" >"$TMP/cc.log" 2>&1 ||
  { cat "$TMP/cc.log" >&2; die "cannot build scripts/udp-floor.c"; }
"${CC:-cc}" -O2 -o "$TMP/shm-floor" "$ROOT/scripts/shm-floor.c" >"$TMP/cc.log" 2>&1 ||
  { cat "$TMP/cc.log" >&2; die "cannot build scripts/shm-floor.c"; }

if [ "$QUICK" = 1 ]; then
  PING=2000 LAT=2000 BULK64=400 BULK1M=20
else
  PING=20000 LAT=10000 BULK64=4000 BULK1M=100
fi
# name | program | arguments | the figure's unit
CASES=(
  "testping|testping|$PING|req/s"
  "testlatency|testlatency|$LAT|req/s"
  "testbulk 65000|testbulk|$BULK64 65000|MB/s"
  "testbulk 1 MiB|testbulk|$BULK1M 1048576|MB/s"
)
# the figure of one run: requests/s (testping, testlatency) or KB/s / 1000 (testbulk)
figure() {
  sed -n 's/.*throughput: \([0-9.]*\) \(requests\/sec\|KB\/sec\).*/\1 \2/p' | head -1 |
    awk '{ if ($2 == "KB/sec") printf "%.0f\n", $1 / 1000; else printf "%.0f\n", $1 }'
}
run() { # library prog args...
  local lib="$1" prog="$2"; shift 2
  local out
  case "$lib" in
    amudp) out="$(cd "$TMP" && timeout 300 "$AMUDP_BIN/$prog" 2 L "$@" 2>&1)" ;;
    ramp) out="$(cd "$TMP" && timeout 300 "$TMP/$prog" 2 L "$@" 2>&1)" ;;
    ramp-udp) out="$(cd "$TMP" && RAMP_TRANSPORT=udp timeout 300 "$TMP/$prog" 2 L "$@" 2>&1)" ;;
    floor-*) # testbulk's bytes (ITERS x SIZE) in 65,000-byte datagrams
      local n=$(( ($1 * $2 + 64999) / 65000 ))
      out="$(timeout 300 "$TMP/udp-floor" "$n" 65000 "${lib#floor-}" 2>"$TMP/floor.err" |
        sed -n 's/^udp-floor: \([0-9]*\) MB\/s/throughput: \1000 KB\/sec/p')"
      [ -s "$TMP/floor.err" ] && echo "amudp-compare.sh: $lib: $(cat "$TMP/floor.err")" >&2 ;;
    shm-*) # testbulk's messages (ITERS of SIZE bytes), one process to another
      out="$(timeout 300 "$TMP/shm-floor" "$1" "$2" "${lib#shm-}" 2>"$TMP/floor.err" |
        sed -n 's/^shm-floor: \([0-9]*\) MB\/s/throughput: \1000 KB\/sec/p')"
      [ -s "$TMP/floor.err" ] && echo "amudp-compare.sh: $lib: $(cat "$TMP/floor.err")" >&2 ;;
  esac
  local f
  f="$(printf '%s\n' "$out" | figure)"
  if [ -z "$f" ]; then
    echo "amudp-compare.sh: no figure from $lib $prog $*:" >&2
    printf '%s\n' "$out" | tail -5 >&2
    echo "-"
  else
    echo "$f"
  fi
}
median() { grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "amudp-compare: GASNet AMX tests, 2 ranks (./prog 2 L ...), $RUNS interleaved runs each"
printf '%-16s %-10s %s\n' "test" "library" "runs"
declare -A MED
for c in "${CASES[@]}"; do
  IFS='|' read -r name prog args unit <<<"$c"
  declare -A RES=()
  libs=(amudp ramp ramp-udp)
  [ "$prog" = testbulk ] && libs+=(floor-0 floor-1 shm-ring shm-cma)
  for ((r = 1; r <= RUNS; r++)); do
    for lib in "${libs[@]}"; do
      # shellcheck disable=SC2086 # args is a word list
      RES[$lib]+="$(run "$lib" "$prog" $args) "
    done
  done
  for lib in "${libs[@]}"; do
    MED[$name/$lib]="$(tr ' ' '\n' <<<"${RES[$lib]}" | grep -v '^$' | median)"
    printf '%-16s %-10s %s %s\n' "$name" "$lib" "${RES[$lib]}" "$unit"
  done
  unset RES
done
echo
echo "medians (ratio to AMUDP):"
printf '%-16s %12s %22s %22s\n' "test" "AMUDP" "ramp (shm default)" "ramp over UDP"
for c in "${CASES[@]}"; do
  IFS='|' read -r name prog args unit <<<"$c"
  a="${MED[$name/amudp]}" s="${MED[$name/ramp]}" u="${MED[$name/ramp-udp]}"
  ratio() { awk -v x="$1" -v y="$2" 'BEGIN { if (x == "-" || y == "-" || y == 0) print "-"; else printf "%.2fx", x / y }'; }
  printf '%-16s %8s %-5s %12s (%5s) %12s (%5s)\n' "$name" "$a" "$unit" "$s" "$(ratio "$s" "$a")" "$u" "$(ratio "$u" "$a")"
done
# floors TITLE HEAD1 HEAD2 WHO LIB1 LIB2 RAMP: a table of two floors beside testbulk, each
# with its ratio to AMUDP, and ramp's figure (library RAMP) against each
floors() {
  local title="$1" h1="$2" h2="$3" who="$4" l1="$5" l2="$6" ours="$7"
  echo
  echo "$title"
  printf '%-16s %21s %28s %15s %15s\n' "test" "$h1" "$h2" "$who / 1st" "$who / 2nd"
  for c in "${CASES[@]}"; do
    IFS='|' read -r name prog args unit <<<"$c"
    [ "$prog" = testbulk ] || continue
    local a="${MED[$name/amudp]}" r="${MED[$name/$ours]}" f1="${MED[$name/$l1]}" f2="${MED[$name/$l2]}"
    printf '%-16s %12s (%6s) %19s (%6s) %15s %15s\n' "$name" "$f1" "$(ratio "$f1" "$a")" "$f2" "$(ratio "$f2" "$a")" "$(ratio "$r" "$f1")" "$(ratio "$r" "$f2")"
  done
}
floors "UDP floors on this host, same interleaving (scripts/udp-floor.c, 65,000-byte datagrams):" \
  "kernel only (/AMUDP)" "with AMUDP's copies (/AMUDP)" "ramp UDP" floor-0 floor-1 ramp-udp
floors "Shared-memory floors on this host, same interleaving (scripts/shm-floor.c, testbulk's messages):" \
  "ring, 1 copy each end" "split cross-memory copy" "ramp shm" shm-ring shm-cma ramp
