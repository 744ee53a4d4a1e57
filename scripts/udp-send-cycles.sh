#!/usr/bin/env bash
# udp-send-cycles.sh -- where each process of a bulk stream spends its cycles, per
# message: `perf record -e cycles -c 100003 -g` of a command, every sample put in the
# system call its kernel stack is under (sendmmsg, recvmsg, ...; `pagefault`, `irq`,
# `syscall-entry`: the entry and exit code; `user`: outside the kernel), its leaf
# symbol kept; printed per process (those with 50 samples or more) as kilocycles per
# message and the share of each call and symbol. Cycles, not time: the figure does
# not count what other processes of the machine took, though they still share its
# caches (read pairs of runs alternated, as always). Needs perf and python3 (root or
# perf_event_paranoid <= 1 for kernel stacks).
#
#   bash scripts/udp-send-cycles.sh MESSAGES TOP CMD...
#     MESSAGES  how many messages the command sends (the divisor)
#     TOP       how many symbols to list per process
#   e.g. RAMP_AUTH=off RAMP_TRANSPORT=udp bash scripts/udp-send-cycles.sh 32000 20 \
#          ./testbulk 2 L 32000 65000          (GASNet's testbulk built against ramp)
#        bash scripts/udp-send-cycles.sh 32000 20 ./udp-floor 32000 65000 1
set -u
n="${1:?usage: udp-send-cycles.sh MESSAGES TOP CMD...}"
top="${2:?usage: udp-send-cycles.sh MESSAGES TOP CMD...}"
shift 2
case "$n$top" in *[!0-9]*) echo "udp-send-cycles.sh: MESSAGES and TOP are numbers" >&2; exit 2 ;; esac
[ "$n" -gt 0 ] || { echo "udp-send-cycles.sh: MESSAGES must be positive" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
perf record -q -g -e cycles -c 100003 -o "$tmp/perf.data" -- "$@" || exit
perf script -i "$tmp/perf.data" -F comm,pid,ip,sym,dso 2>/dev/null | python3 -c '
import collections, re, sys
n, top, period = int(sys.argv[1]), int(sys.argv[2]), 100003
tot = collections.Counter()
cats = collections.defaultdict(collections.Counter)
syms = collections.defaultdict(collections.Counter)
pid, frames = None, []
def flush():
    global frames
    if pid is not None and frames:
        tot[pid] += 1
        sc = None
        if any("exc_page_fault" in f for f in frames):
            sc = "pagefault"
        elif any("asm_sysvec" in f or "asm_common_interrupt" in f for f in frames):
            sc = "irq"
        else:
            for f in reversed(frames):
                m = re.search(r"\s(?:__x64_sys_|__se_sys_|__do_sys_|__sys_)(\w+)", f)
                if m:
                    sc = m.group(1)
                    break
        leaf = frames[0]
        if sc is None:
            if "[kernel" not in leaf:
                sc = "user"
            elif "do_syscall_64" in leaf or "entry_SYSCALL" in leaf or "syscall_exit" in leaf:
                sc = "syscall-entry"
            else:
                sc = "kernel-other"
        cats[pid][sc] += 1
        s = re.sub(r"\+0x[0-9a-f]+", "", re.sub(r" \(.*\)$", "", re.sub(r"^\s*[0-9a-f]+\s+", "", leaf)))
        syms[pid][(sc, s[:90])] += 1
    frames = []
for line in sys.stdin:
    if not line.strip():
        flush()
    elif not line.startswith((" ", "\t")):
        flush()
        m = re.match(r"\s*\S+\s+(\d+)", line)
        pid = m.group(1) if m else None
    else:
        frames.append(line.strip())
flush()
for p in sorted(tot, key=lambda p: -tot[p]):
    if tot[p] < 50:
        continue
    print("pid %s: %.2f kcycles a message (%d samples)" % (p, tot[p] * period / n / 1000, tot[p]))
    print("  " + ", ".join("%s %.1f%%" % (k, 100.0 * v / tot[p]) for k, v in cats[p].most_common(10)))
    for (sc, s), v in syms[p].most_common(top):
        print("    %5.1f%% %6.2f [%s] %s" % (100.0 * v / tot[p], v * period / n / 1000, sc, s))
' "$n" "$top"
