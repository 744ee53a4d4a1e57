#!/usr/bin/env python3
"""The figures of scripts/rails-bench.sh from its outputs (a directory of
events<r>/, tput<r>-<rails>/, plot<r>/ and rtt<r>-<rails>/ runs):
failover, recovery and partition resume times per run and their medians
(link_load's progress lines; ramp bench --rails's per-path samples), goodput
over one rail and two, short round trips over one rail and two; then issue
38's targets, each with its median and met or missed. See the head of
rails-bench.sh for what each figure means.

    scripts/rails-bench-table.py DIR SETTLE_SECONDS [RATE]
"""
import glob
import os
import re
import statistics
import sys


MIB = 1 << 20


def med(v):
    return statistics.median(v) if v else None


def fmt(v):
    return "-" if v is None else f"{v:.0f}"


def kv(line):
    return dict(x.split("=", 1) for x in line.split()[2:] if "=" in x)


def events(d, settle, res):
    rc = open(f"{d}/rc").read().strip()
    out = open(f"{d}/out").read().splitlines()
    prog = [kv(l) for l in out if l.startswith("link_load: progress ")]
    prog = [(int(p["unix_ms"]), int(p["delivered"])) for p in prog]
    links = [tuple(map(int, l.split())) for l in open(f"{d}/links") if len(l.split()) == 3]
    ev = [(int(t), n, c) for t, n, c in (l.split() for l in open(f"{d}/events"))]
    # the instants at which something was delivered (a sample whose count grew)
    grew = [prog[i][0] for i in range(1, len(prog)) if prog[i][1] > prog[i - 1][1]]
    passed = "PASS" if any(l.startswith("link_load: PASS") for l in out) else "FAIL"
    print(f"run {os.path.basename(d)}: exit {rc} {passed}")
    for k, (t, name, c) in enumerate(ev):
        if name == "stop":
            continue
        nxt = ev[k + 1][0] if k + 1 < len(ev) else t + settle
        w = [x for x in links if t <= x[0] <= nxt]
        carried = ""
        if len(w) >= 2:
            carried = (f"eth0 {(w[-1][1] - w[0][1]) / 1e6:.1f} MB, "
                       f"rail1 {(w[-1][2] - w[0][2]) / 1e6:.1f} MB")
        line = f"  {name:12} rail {c}"
        if name in ("carrier_down", "carrier_silent"):
            # the longest pause in delivery across the event or within 1 s after it
            gaps = [(b - a, a, b) for a, b in zip(grew, grew[1:]) if b > t and a < t + 1000]
            g = max(gaps, default=None)
            # the extra time the next MiB took: against the rate of the second before
            d0 = next((d for u, d in reversed(prog) if u <= t), None)
            d1 = next((d for u, d in reversed(prog) if u <= t - 1000), None)
            tx = next((u for u, d in prog if d0 is not None and d >= d0 + MIB), None)
            if g:
                res[name + " pause"].append(g[0])
                line += f" pause_ms={g[0]}"
            if None not in (d0, d1, tx) and d0 > d1:
                extra = (tx - t) - MIB / (d0 - d1) * 1000
                res[name + " failover"].append(extra)
                line += f" next_MiB_ms={tx - t} failover_ms={extra:.0f}"
        elif name == "carrier_up":
            col = 1 + int(c)
            base = next((x[col] for x in links if x[0] >= t), None)
            hit = next((x[0] for x in links
                        if x[0] >= t and base is not None and x[col] - base > 262144), None)
            rec = hit - t if hit is not None and hit - t <= settle else None
            if rec is not None:
                res["recovery"].append(rec)
            line += f" recovery_ms={fmt(rec)}"
        elif name == "both_up":
            first = next((b for b in grew if b > t), None)
            if first is not None:
                res["resume"].append(first - t)
                line += f" resume_ms={first - t}"
        print(f"{line} carried: {carried}")


def main():
    tmp, settle = sys.argv[1], int(sys.argv[2]) * 1000
    rate_arg = sys.argv[3] if len(sys.argv) > 3 else "off"
    res = {k: [] for k in ("carrier_down pause", "carrier_down failover", "recovery",
                           "carrier_silent pause", "carrier_silent failover", "resume")}
    runs = sorted(glob.glob(f"{tmp}/events*"))
    for d in runs:
        events(d, settle, res)
    if runs:
        print(f"medians over {len(runs)} runs (ms): " + ", ".join(
            f"{k}={fmt(med(v))} ({len(v)}/{len(runs)} runs)" for k, v in res.items()))
    targets = []
    plots = sorted(glob.glob(f"{tmp}/plot*"))
    fig = {"failover": [], "rejoin": [], "resume": []}
    for d in plots:
        got = {k: [] for k in fig}
        for l in open(f"{d}/out"):
            m = re.match(r"bench-rails: figure (\w+) rail=(\d+) at_s=\S+ ms=(\S+)", l)
            if m:
                got[m.group(1)].append(None if m.group(3) == "-" else float(m.group(3)))
        ok = "PASS" if "bench-rails: PASS" in open(f"{d}/out").read() else "FAIL"
        print(f"run {os.path.basename(d)}: exit {open(f'{d}/rc').read().strip()} {ok} "
              + " ".join(f"{k}_ms={[fmt(x) for x in v]}" for k, v in got.items()))
        for k, v in got.items():
            # a run's figure: its worst (a threshold never crossed: missing)
            if v:
                fig[k].append(None if None in v else max(v))
    for k, bound in (("failover", 1000), ("rejoin", 2000), ("resume", 1000)):
        v = [x for x in fig[k] if x is not None]
        if fig[k]:
            m = med(v) if len(v) == len(fig[k]) else None
            targets.append((f"{k} (ramp bench --rails, worst per run)", f"< {bound} ms",
                            f"{fmt(m)} ms ({len(v)}/{len(fig[k])} runs crossed)",
                            m is not None and m < bound))
    tp, retx = {}, {}
    for d in sorted(glob.glob(f"{tmp}/tput*")):
        rails = d.rsplit("-", 1)[1].replace("+", ",")
        for l in open(f"{d}/out"):
            m = re.search(r"link_load: total .* goodput_MBps=([0-9.]+)", l)
            if m:
                tp.setdefault(rails, []).append(float(m.group(1)))
            m = re.search(r"link_load: sender .* packets=(\d+) packets_retransmitted=(\d+)", l)
            if m:
                retx.setdefault(rails, []).append(int(m.group(2)) / max(1, int(m.group(1))))
    for rails, v in tp.items():
        r = retx.get(rails, [])
        print(f"throughput RAMP_RAILS={rails}: goodput MB/s runs {v} median {med(v):.2f}; "
              f"retransmitted packets {[f'{x:.4f}' for x in r]}")
    if "eth0" in tp and "eth0,rail1" in tp:
        ratio = med(tp["eth0,rail1"]) / med(tp["eth0"])
        targets.append(("two rails / one (link_load goodput)", ">= 1.8x", f"{ratio:.2f}x",
                        ratio >= 1.8))
    rate = re.fullmatch(r"(\d+)([kmg]?)bit", rate_arg)
    if "eth0" in tp and rate:
        mbit = int(rate.group(1)) * {"": 1e-6, "k": 1e-3, "m": 1, "g": 1e3}[rate.group(2)]
        share = med(tp["eth0"]) * 8 / mbit
        targets.append((f"one rail's goodput / its rate ({rate_arg})", ">= 0.9",
                        f"{share:.3f}", share >= 0.9))
        r = med(retx.get("eth0", []))
        if r is not None:
            targets.append(("one rail: packets retransmitted", "< 2%", f"{100 * r:.2f}%",
                            r < 0.02))
    rtt = {}
    for d in sorted(glob.glob(f"{tmp}/rtt*")):
        rails = d.rsplit("-", 1)[1].replace("+", ",")
        for l in open(f"{d}/out"):
            m = re.search(r"bench-rails: rtt .* median_us=([0-9.]+) p99_us=([0-9.]+)", l)
            if m:
                rtt.setdefault(rails, []).append((float(m.group(1)), float(m.group(2))))
    for rails, v in rtt.items():
        print(f"short round trip RAMP_RAILS={rails}: median us runs {[x[0] for x in v]} "
              f"median {med([x[0] for x in v]):.2f}; p99 runs {[x[1] for x in v]}")
    if "eth0" in rtt and "eth0,rail1" in rtt:
        ratio = med([x[0] for x in rtt["eth0,rail1"]]) / med([x[0] for x in rtt["eth0"]])
        targets.append(("short round trip, two rails / one (medians)", "<= 1.00x (no slower)",
                        f"{ratio:.3f}x", ratio <= 1.0))
    if targets:
        print("issue 38 targets:")
        for name, want, got, ok in targets:
            print(f"  {name:48} {want:22} {got:32} {'met' if ok else 'MISSED'}")

main()
