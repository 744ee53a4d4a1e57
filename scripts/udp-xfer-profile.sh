#!/bin/bash
# Where the sender's time goes, per message, in `ramp bench`'s UDP Xfer of
# 64 KiB beside its raw UDP blast of 65,507-byte datagrams (the figure the
# Xfer / blast ratio compares): the bench client (the sender of both,
# pinned to core 0) under `perf record --call-graph dwarf` (frame pointers
# are not kept: `-g` stops at the kernel), each sample put in a phase by
# its call chain (the blast's run in `blast_sender`; every other sample
# counted as the Xfer's: with a large --xfer-mib and few round trips the
# Xfer is nearly all of the rest) and in a kind by where it was taken,
# its CPU time divided by the phase's messages.
#
# usage: scripts/udp-xfer-profile.sh [RAMP_BINARY] [XFER_MIB]
#   RAMP_AUTH=on for the packet MAC's run instead (default: off, CRC32C),
#   with RAMP_JOB_KEY or a random one
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/release/ramp}")
mib=${2:-4096}
command -v perf >/dev/null || { echo "perf is needed" >&2; exit 1; }
export RAMP_AUTH=${RAMP_AUTH:-off} RAMP_TRANSPORT=udp
if [ "$RAMP_AUTH" = on ] && [ -z "${RAMP_JOB_KEY:-}" ]; then
    RAMP_JOB_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
    export RAMP_JOB_KEY
fi
hz=${PROFILE_HZ:-999}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/in"
taskset -c 1 "$bin" bench-server <"$tmp/in" >"$tmp/srv" 2>"$tmp/srv.err" &
srv=$!
exec 3>"$tmp/in"
# (each role's start awaited while it lives: a role that fails says why)
until [ -s "$tmp/srv" ]; do
    kill -0 $srv 2>/dev/null || { cat "$tmp/srv.err" >&2; exit 1; }
    sleep 0.05
done
# shellcheck disable=SC2046
taskset -c 0 perf record -q --call-graph dwarf,8192 -F $hz -o "$tmp/client.data" -- \
    "$bin" bench-client $(head -1 "$tmp/srv") 1000 1 "$mib" >"$tmp/cli" 2>"$tmp/cli.err" &
cli=$!
until [ -s "$tmp/cli" ]; do
    kill -0 $cli 2>/dev/null || { cat "$tmp/cli.err" >&2; kill $srv; exit 1; }
    sleep 0.05
done
head -1 "$tmp/cli" >&3
wait $cli
exec 3>&-
wait $srv
grep -E "Xfer bandwidth|raw UDP blast|Xfer 64 KiB / raw" "$tmp/cli"
xfers=$(grep -oE "\(([0-9]+) x 64 KiB per run" "$tmp/cli" | grep -oE "[0-9]+" | head -1)
blasts=$(grep -oE "\(([0-9]+) x 65507 B per run" "$tmp/cli" | grep -oE "[0-9]+" | head -1)
perf script -i "$tmp/client.data" -F ip,sym 2>/dev/null |
    python3 -c '
import sys
hz, xfers, blasts = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
KINDS = ["kernel copy of the payload", "kernel send, the rest", "kernel receive",
         "memmove", "CRC32C / GHASH", "ramp, the rest", "other"]
def kind(chain):
    top = chain[0]
    if top == "_copy_from_iter":
        return 0
    if any(s in ("udp_sendmsg", "__sys_sendmmsg", "__sys_sendto") for s in chain):
        return 1
    if any("recv" in s for s in chain[:12] if not s.startswith("ramp")):
        return 2
    if "memmove" in top or "memcpy" in top:
        return 3
    if "crc" in top or "ghash" in top or "gcm" in top:
        return 4
    if top.startswith("ramp") or top.startswith("<ramp"):
        return 5
    return 6
n = {"xfer": [0] * len(KINDS), "blast": [0] * len(KINDS)}
chain = []
def flush():
    if chain:
        phase = "blast" if any("blast_sender" in s for s in chain) else "xfer"
        n[phase][kind(chain)] += 1
for line in sys.stdin:
    line = line.strip()
    if not line:
        flush(); chain = []
        continue
    parts = line.split(None, 1)
    chain.append(parts[1].split("+")[0] if len(parts) > 1 else "?")
flush()
per = {"xfer": 1e6 / hz / max(xfers, 1), "blast": 1e6 / hz / max(blasts, 1)}
print("sender CPU per message (us): Xfer of 64 KiB (%d) | raw blast of 65,507 B (%d)" % (xfers, blasts))
for i, k in enumerate(KINDS):
    print("  %-28s %7.2f | %7.2f" % (k, n["xfer"][i] * per["xfer"], n["blast"][i] * per["blast"]))
print("  %-28s %7.2f | %7.2f" % ("all", sum(n["xfer"]) * per["xfer"], sum(n["blast"]) * per["blast"]))
' $hz "${xfers:-1}" "${blasts:-1}"
