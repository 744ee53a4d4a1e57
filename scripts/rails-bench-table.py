#!/usr/bin/env python3
"""The figures of scripts/rails-bench.sh from its outputs (a directory of
events<r>/ and tput<r>-<rails>/ runs): failover, recovery and partition
resume times per run and their medians, and goodput over one rail and two.
See the head of rails-bench.sh for what each figure means.

    scripts/rails-bench-table.py DIR SETTLE_SECONDS
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
    res = {k: [] for k in ("carrier_down pause", "carrier_down failover", "recovery",
                           "carrier_silent pause", "carrier_silent failover", "resume")}
    runs = sorted(glob.glob(f"{tmp}/events*"))
    for d in runs:
        events(d, settle, res)
    if runs:
        print(f"medians over {len(runs)} runs (ms): " + ", ".join(
            f"{k}={fmt(med(v))} ({len(v)}/{len(runs)} runs)" for k, v in res.items()))
    tp = {}
    for d in sorted(glob.glob(f"{tmp}/tput*")):
        rails = d.rsplit("-", 1)[1].replace("+", ",")
        for l in open(f"{d}/out"):
            m = re.search(r"link_load: total .* goodput_MBps=([0-9.]+)", l)
            if m:
                tp.setdefault(rails, []).append(float(m.group(1)))
    for rails, v in tp.items():
        print(f"throughput RAMP_RAILS={rails}: goodput MB/s runs {v} median {med(v):.2f}")


main()
