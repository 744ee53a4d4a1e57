#!/usr/bin/env bash
# Several "hosts" on one machine, for multi-host tests of ramp: network
# namespaces ramp0..ramp(N-1), each with an interface eth0 (one end of a
# veth pair whose other end, rampv<i>, is a port of the bridge rampbr0 in
# the root namespace).
#
#   scripts/netns.sh up N          create (or complete) ramp0..ramp(N-1)
#   scripts/netns.sh down          remove every ramp<i> namespace, rampv<i>
#                                  link and the bridge
#   scripts/netns.sh exec I cmd..  run cmd inside namespace ramp<I>
#   scripts/netns.sh pick MAP R cmd..  run cmd inside namespace ramp<MAP[R]>,
#                                  MAP a comma-separated list (a launcher's
#                                  --wrap 'netns.sh pick 0,2 {rank}': rank 1
#                                  in ramp2)
#   scripts/netns.sh addr I        print the address of ramp<I>
#   scripts/netns.sh check         exit 0 if namespaces, veth pairs and bridges
#                                  can be made here, else 2 with the reason
#                                  (creates and removes probes; leaves nothing)
#   scripts/netns.sh check-shape   check, then whether tc can put a tbf on a link
#                                  (exit 2 with the reason if not)
#   scripts/netns.sh shape I RATE  shape the link toward ramp<I> (egress of
#                                  rampv<I>): tbf RATE (tc's units, 200mbit)
#                                  burst 565kb latency 30ms; `shape I off`
#                                  removes it
#   scripts/netns.sh qdisc I       `tc -s qdisc show` of rampv<I>
#   scripts/netns.sh rails K       rails between ramp0 and ramp1 (made with `up 2`
#                                  if missing): K direct veth pairs (1..3), each
#                                  end named rail<k> in its namespace, on the
#                                  subnet A.B.(C+k).0/24: .1 in ramp0, .2 in
#                                  ramp1 (ramp's RAMP_RAILS=eth0,rail1,..);
#                                  `rails 0` removes them
#   scripts/netns.sh rail K up|down  set rail K's link up or down (both ends);
#                                  rail 0 is eth0 of ramp0 and ramp1 (the
#                                  bridge's: the launcher's network too)
#   scripts/netns.sh rail-shape K RATE  tbf RATE on both ends of rail K (each
#                                  direction); `rail-shape K off` removes it
#
# Options before the command (every command honours them):
#   -p PREFIX   names PREFIX<i>, PREFIXv<i>, PREFIXbr0 instead of ramp<i>,
#               rampv<i>, rampbr0 (2-8 lower-case letters), so that suites
#               that run at the same time never touch each other's
#   -s A.B.C    the subnet A.B.C.0/24 instead of 10.99.0 (give each prefix
#               its own)
#
# Addresses: 10.99.0.1/24 on rampbr0, 10.99.0.(10+i)/24 on eth0 of ramp<i>;
# loopback is up in every namespace. Nothing else is configured: no
# default route, no other address, no forwarding or NAT, so the namespaces
# reach each other and the root namespace (10.99.0.1) and nothing else.
#
# `up` is idempotent: what exists is kept, what is missing is created.
# `down` first kills (SIGKILL, by pid) what still runs inside the namespaces
# (workers of a job whose launcher was killed), then removes them.
# Exit status 2 (with a message) when namespaces cannot be created here
# (not root, no CAP_NET_ADMIN/CAP_SYS_ADMIN, no `ip`), so callers can skip.

set -euo pipefail

PFX=ramp
NET=10.99.0
MAX=200

die() { echo "netns.sh: $*" >&2; exit 1; }
cannot() {
    echo "netns.sh: cannot create network namespaces here: $*" >&2
    echo "netns.sh: (needs root or CAP_NET_ADMIN+CAP_SYS_ADMIN, and iproute2)" >&2
    exit 2
}

usage() {
    sed -n '2,54p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1
}

have_ns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# Whether this process may create namespaces: checked by doing it.
check_caps() {
    command -v ip >/dev/null 2>&1 || cannot "the ip command (iproute2) is missing"
    local probe="rampprobe$$"
    local err
    if ! err=$(ip netns add "$probe" 2>&1); then
        cannot "ip netns add failed: $err"
    fi
    ip netns del "$probe" 2>/dev/null || true
    if ! ip link show "$BR" >/dev/null 2>&1; then
        if ! err=$(ip link add "$BR" type bridge 2>&1); then
            cannot "ip link add $BR type bridge failed: $err"
        fi
    fi
}

# Like check_caps, but leaves nothing behind: for callers deciding whether to skip.
check() {
    command -v ip >/dev/null 2>&1 || cannot "the ip command (iproute2) is missing"
    local probe="rampprobe$$" br="rampprb$$" err
    if ! err=$(ip netns add "$probe" 2>&1); then
        cannot "ip netns add failed: $err"
    fi
    if ! err=$(ip link add "rampp$$a" type veth peer name "rampp$$b" netns "$probe" 2>&1); then
        ip netns del "$probe" 2>/dev/null || true
        cannot "ip link add ... type veth failed: $err"
    fi
    ip link del "rampp$$a" 2>/dev/null || true
    ip netns del "$probe" 2>/dev/null || true
    if ! err=$(ip link add "$br" type bridge 2>&1); then
        cannot "ip link add ... type bridge failed: $err"
    fi
    ip link del "$br" 2>/dev/null || true
    echo "netns.sh: network namespaces, veth pairs and bridges can be made here"
}

# check, then a token bucket on a probe namespace's loopback (tc present,
# sch_tbf available).
check_shape() {
    check >/dev/null
    command -v tc >/dev/null 2>&1 || cannot "the tc command (iproute2) is missing"
    local probe="rampprobe$$" err
    ip netns add "$probe" 2>/dev/null || cannot "ip netns add failed"
    if ! err=$(ip netns exec "$probe" tc qdisc add dev lo root tbf rate 100mbit burst 565kb latency 30ms 2>&1); then
        ip netns del "$probe" 2>/dev/null || true
        cannot "tc qdisc add ... tbf failed: $err"
    fi
    ip netns del "$probe" 2>/dev/null || true
    echo "netns.sh: network namespaces can be made and links shaped (tc tbf) here"
}

num() { [[ "$1" =~ ^[0-9]+$ ]] || die "not a number: $1"; }

up() {
    local n=$1
    num "$n"
    (( n >= 1 && n <= MAX )) || die "N must be 1..$MAX"
    check_caps
    # The bridge (created by check_caps if it was missing).
    ip addr replace "$NET.1/24" dev "$BR"
    # Bridged frames must not go through the host's iptables (Docker's
    # FORWARD DROP would eat them); a per-bridge setting, best effort.
    ip link set "$BR" type bridge nf_call_iptables 0 nf_call_ip6tables 0 \
        nf_call_arptables 0 2>/dev/null || true
    ip link set "$BR" up
    local i
    for (( i = 0; i < n; i++ )); do
        local ns="$PFX$i" host="${PFX}v$i" addr="$NET.$((10 + i))"
        have_ns "$ns" || ip netns add "$ns"
        if ! ip link show "$host" >/dev/null 2>&1; then
            # A stale namespace end without its root end: start over.
            ip -n "$ns" link del eth0 2>/dev/null || true
            ip link add "$host" type veth peer name "${PFX}n$i" netns "$ns"
            ip -n "$ns" link set "${PFX}n$i" name eth0
        fi
        ip link set "$host" master "$BR"
        ip link set "$host" up
        ip -n "$ns" addr replace "$addr/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done
    echo "netns.sh: $n namespace(s) ${PFX}0..$PFX$((n - 1)) on $BR ($NET.1): $NET.10..$NET.$((9 + n))"
}

down() {
    command -v ip >/dev/null 2>&1 || cannot "the ip command (iproute2) is missing"
    local ns l pids
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PFX[0-9]+\$" || true); do
        # processes left inside (a killed launcher's workers): a deleted
        # namespace would live on with them
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [[ -n "$pids" ]]; then
            # shellcheck disable=SC2086
            kill -9 $pids 2>/dev/null || true
        fi
        ip netns del "$ns"
    done
    # Root ends normally vanish with their namespace; remove any leftover.
    for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' \
               | grep -E "^${PFX}v[0-9]+\$" || true); do
        ip link del "$l" 2>/dev/null || true
    done
    if ip link show "$BR" >/dev/null 2>&1; then
        ip link del "$BR"
    fi
    echo "netns.sh: removed the $PFX namespaces and $BR"
}

# The link toward namespace I: a token bucket of RATE on the bridge's port
# (what ramp<I> receives queues there), or none ("off").
shape() {
    local i=$1 rate=$2 dev="${PFX}v$1"
    num "$i"
    ip link show "$dev" >/dev/null 2>&1 || die "$dev does not exist (run: $0 up N)"
    if [[ "$rate" == off ]]; then
        tc qdisc del dev "$dev" root 2>/dev/null || true
    else
        [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || die "rate: expected e.g. 200mbit, got $rate"
        tc qdisc replace dev "$dev" root tbf rate "$rate" burst 565kb latency 30ms
    fi
}

# Rail k's subnet: the third octet of NET plus k.
rail_net() {
    local a b c
    IFS=. read -r a b c <<<"$NET"
    (( c + $1 <= 255 )) || die "rail $1: $NET.0 leaves no room for its subnet"
    echo "$a.$b.$((c + $1))"
}

# K direct veth pairs between ${PFX}0 and ${PFX}1 (the launcher's network
# stays the bridge's eth0): rail<k> in each, A.B.(C+k).1 and .2; those
# beyond K removed.
rails() {
    local k=$1 j
    num "$k"
    (( k <= 3 )) || die "rails: at most 3 (ramp has at most 4 rails, eth0 one of them)"
    have_ns "${PFX}0" && have_ns "${PFX}1" || up 2 >/dev/null
    for (( j = 1; j <= 3; j++ )); do
        if (( j > k )); then
            ip -n "${PFX}0" link del "rail$j" 2>/dev/null || true
            continue
        fi
        local net
        net=$(rail_net "$j")
        if ! ip -n "${PFX}0" link show "rail$j" >/dev/null 2>&1; then
            ip -n "${PFX}1" link del "rail$j" 2>/dev/null || true
            ip link add "${PFX}r${j}a" netns "${PFX}0" type veth peer name "${PFX}r${j}b" netns "${PFX}1"
            ip -n "${PFX}0" link set "${PFX}r${j}a" name "rail$j"
            ip -n "${PFX}1" link set "${PFX}r${j}b" name "rail$j"
        fi
        ip -n "${PFX}0" addr replace "$net.1/24" dev "rail$j"
        ip -n "${PFX}1" addr replace "$net.2/24" dev "rail$j"
        ip -n "${PFX}0" link set "rail$j" up
        ip -n "${PFX}1" link set "rail$j" up
    done
    echo "netns.sh: $k rail(s) between ${PFX}0 and ${PFX}1: rail<k> on $(rail_net 1).0/24 .. (.1 in ${PFX}0, .2 in ${PFX}1)"
}

# Rail K's link, in both namespaces: up or down (rail 0: eth0).
rail_link() {
    local k=$1 state=$2 i dev
    num "$k"
    dev="rail$k"
    (( k > 0 )) || dev=eth0
    [[ "$state" == up || "$state" == down ]] || die "rail $k: expected up or down, got $state"
    for i in 0 1; do
        ip -n "$PFX$i" link show "$dev" >/dev/null 2>&1 || die "$dev does not exist in $PFX$i (run: $0 rails K)"
        ip -n "$PFX$i" link set "$dev" "$state"
    done
}

# A token bucket of RATE on both ends of rail K (each direction), or none.
rail_shape() {
    local k=$1 rate=$2 i
    num "$k"
    for i in 0 1; do
        ip -n "$PFX$i" link show "rail$k" >/dev/null 2>&1 || die "rail$k does not exist in $PFX$i (run: $0 rails K)"
        if [[ "$rate" == off ]]; then
            ip netns exec "$PFX$i" tc qdisc del dev "rail$k" root 2>/dev/null || true
        else
            [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || die "rate: expected e.g. 200mbit, got $rate"
            ip netns exec "$PFX$i" tc qdisc replace dev "rail$k" root tbf rate "$rate" burst 565kb latency 30ms
        fi
    done
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        -p)
            [[ $# -ge 2 && "$2" =~ ^[a-z]{2,8}$ ]] || die "-p: expected 2-8 lower-case letters"
            PFX=$2
            shift 2
            ;;
        -s)
            [[ $# -ge 2 && "$2" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "-s: expected A.B.C"
            NET=$2
            shift 2
            ;;
        *) break ;;
    esac
done
BR="${PFX}br0"

cmd=${1:-}
case "$cmd" in
    up)
        [[ $# -eq 2 ]] || usage
        up "$2"
        ;;
    down)
        [[ $# -eq 1 ]] || usage
        down
        ;;
    exec)
        [[ $# -ge 3 ]] || usage
        num "$2"
        have_ns "$PFX$2" || die "namespace $PFX$2 does not exist (run: $0 up N)"
        shift
        i=$1
        shift
        exec ip netns exec "$PFX$i" "$@"
        ;;
    check)
        [[ $# -eq 1 ]] || usage
        check
        ;;
    check-shape)
        [[ $# -eq 1 ]] || usage
        check_shape
        ;;
    pick)
        [[ $# -ge 4 && "$2" =~ ^[0-9]+(,[0-9]+)*$ ]] || usage
        num "$3"
        IFS=, read -r -a map <<<"$2"
        (( $3 < ${#map[@]} )) || die "rank $3: the map $2 has ${#map[@]} entries"
        i=${map[$3]}
        have_ns "$PFX$i" || die "namespace $PFX$i does not exist (run: $0 up N)"
        shift 3
        exec ip netns exec "$PFX$i" "$@"
        ;;
    shape)
        [[ $# -eq 3 ]] || usage
        shape "$2" "$3"
        ;;
    qdisc)
        [[ $# -eq 2 ]] || usage
        num "$2"
        tc -s qdisc show dev "${PFX}v$2"
        ;;
    rails)
        [[ $# -eq 2 ]] || usage
        rails "$2"
        ;;
    rail)
        [[ $# -eq 3 ]] || usage
        rail_link "$2" "$3"
        ;;
    rail-shape)
        [[ $# -eq 3 ]] || usage
        rail_shape "$2" "$3"
        ;;
    addr)
        [[ $# -eq 2 ]] || usage
        num "$2"
        echo "$NET.$((10 + $2))"
        ;;
    *)
        usage
        ;;
esac
