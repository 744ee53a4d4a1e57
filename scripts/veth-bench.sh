#!/usr/bin/env bash
# `ramp bench`'s two roles over an unshaped veth pair (issue 37: a path's
# datagrams fit its MTU, 1500 on veth; GSO/GRO keep them cheap): the
# server in namespace rvb0, the client in rvb1, joined by a bridge
# (scripts/netns.sh -p rvb -s 10.96.0), RAMP_TRANSPORT=udp and
# RAMP_INTERFACE=eth0. With two builds or more their pairs run
# alternated, RUNS rounds; the table shows per build the median of each
# figure over the rounds (each round's figure is itself ramp bench's
# median of its --runs): raw UDP ping-pong and ramp's 0-arg round trip
# (us), Xfer 64 KiB (MiB/s), pipelined request rate (req/s), and each
# build's ratio to the first's.
#
#   scripts/veth-bench.sh [--rounds N] [--iters N] [--runs N] [--xfer-mib N]
#                         [--bin LABEL=DIR]... [--env LABEL VAR=VALUE]...
#     DIR holds the ramp binary (default: target/release, label new).
# Needs root (namespaces); exit 2 where they cannot be made. The
# namespaces are removed on exit, also on Ctrl-C.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETNS=(bash "$ROOT/scripts/netns.sh" -p rvb -s 10.96.0)
ROUNDS=3
ITERS=5000
RUNS=3
MIB=64
BINS=()
LABELS=()
declare -A ENVS=()

die() { echo "veth-bench: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --iters) ITERS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --xfer-mib) MIB=$2; shift 2 ;;
        --bin)
            v=${2:-}; l=new
            if [[ "$v" == *=* ]]; then l=${v%%=*}; v=${v#*=}; fi
            [[ -x "$v/ramp" ]] || die "--bin: no ramp in $v"
            BINS+=("$(cd "$v" && pwd)"); LABELS+=("$l"); shift 2 ;;
        --env)
            [[ "${3:-}" =~ ^RAMP_[A-Z0-9_]+=[^[:space:]]*$ ]] || die "--env LABEL RAMP_VAR=VALUE"
            ENVS[$2]="${ENVS[$2]:-} $3"; shift 3 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done
for n in "$ROUNDS" "$ITERS" "$RUNS" "$MIB"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "counts are positive numbers: $n"
done
if [[ ${#BINS[@]} -eq 0 ]]; then BINS=("$ROOT/target/release"); LABELS=(new); fi

"${NETNS[@]}" check >/dev/null 2>&1 || die "network namespaces cannot be made here"
TMP=$(mktemp -d)
SRV=""
cleanup() {
    [[ -n "$SRV" ]] && kill "$SRV" 2>/dev/null
    exec 3>&- 2>/dev/null
    "${NETNS[@]}" down >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"${NETNS[@]}" down >/dev/null 2>&1
"${NETNS[@]}" up 2 >/dev/null || die "netns.sh up failed"

# waits until file $1 has a first line; prints it
first_line() {
    for _ in $(seq 600); do
        if [[ -s "$1" ]] && head -n 1 "$1" | grep -q .; then head -n 1 "$1"; return 0; fi
        sleep 0.1
    done
    return 1
}

# one pair with build $1 (index); appends its FIGURES to $TMP/fig.$1
pair() {
    local i=$1 bin=${BINS[$1]} label=${LABELS[$1]}
    local envs=(RAMP_TRANSPORT=udp RAMP_INTERFACE=eth0 ${ENVS[$label]:-})
    rm -f "$TMP/in" "$TMP/srv" "$TMP/cli"
    mkfifo "$TMP/in"
    "${NETNS[@]}" exec 0 env "${envs[@]}" "$bin/ramp" bench-server <"$TMP/in" >"$TMP/srv" 2>"$TMP/srv.err" &
    SRV=$!
    exec 3>"$TMP/in"
    local ready name
    ready=$(first_line "$TMP/srv") || die "the server did not start: $(cat "$TMP/srv.err")"
    timeout -k 5 300 "${NETNS[@]}" exec 1 env "${envs[@]}" "$bin/ramp" bench-client $ready "$ITERS" "$RUNS" "$MIB" \
        >"$TMP/cli" 2>"$TMP/cli.err" &
    local cli=$!
    name=$(first_line "$TMP/cli") || die "the client did not start: $(cat "$TMP/cli.err")"
    echo "$name" >&3
    wait "$cli" || echo "veth-bench: $label's client failed: $(tail -n 3 "$TMP/cli.err")" >&2
    exec 3>&-
    wait "$SRV" 2>/dev/null
    SRV=""
    grep '^FIGURES ' "$TMP/cli" | tail -n 1 >>"$TMP/fig.$i"
    grep -E 'Xfer bandwidth|0 args |request rate' "$TMP/cli" | sed "s/^/  $label: /" >&2
}

for r in $(seq "$ROUNDS"); do
    for i in "${!BINS[@]}"; do
        echo "veth-bench: round $r/$ROUNDS, ${LABELS[$i]}" >&2
        pair "$i"
    done
done

# FIGURES raw rt0 rt4 bw rate blast: medians over the rounds
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo "# veth-bench: $ROUNDS rounds alternated, ramp bench --iters $ITERS --runs $RUNS, Xfers of $MIB MiB per run; unshaped veth (MTU $(ip netns exec rvb0 cat /sys/class/net/eth0/mtu))"
echo "| build | raw UDP rt us | ramp 0-arg rt us | Xfer 64 KiB MiB/s | rate req/s | rt / first | Xfer / first | rate / first |"
echo "|---|---|---|---|---|---|---|---|"
declare -a B0
for i in "${!BINS[@]}"; do
    f="$TMP/fig.$i"
    [[ -s "$f" ]] || { echo "| ${LABELS[$i]} | failed | | | | | | |"; continue; }
    raw=$(awk '{print $2}' "$f" | med); rt=$(awk '{print $3}' "$f" | med)
    bw=$(awk '{print $5}' "$f" | med); rate=$(awk '{print $6}' "$f" | med)
    if [[ $i -eq 0 ]]; then B0=("$rt" "$bw" "$rate"); fi
    printf '| %s | %.1f | %.1f | %.0f | %.0f | %.2f | %.2f | %.2f |\n' "${LABELS[$i]}" "$raw" "$rt" "$bw" "$rate" \
        "$(echo "$rt / ${B0[0]}" | bc -l)" "$(echo "$bw / ${B0[1]}" | bc -l)" "$(echo "$rate / ${B0[2]}" | bc -l)"
done
