#!/usr/bin/env python3
"""The table of scripts/link-bench.sh: reads the jobs' output it kept in DIR
(files CASE.LABEL.RUN.JOB.out/.rc, CASE.LABEL.RUN.qdisc, meta) and prints one
row per case and build: medians over the runs, the issue's targets beside
each figure, and each run's outcome.

    python3 scripts/link-bench-table.py DIR [CASES]
"""

import json
import os
import re
import statistics
import sys

RATE = {"base": None, "r100": 100e6, "r200": 200e6, "r400": 400e6,
        "incast": 200e6, "twojobs": 200e6, "loss": 200e6}
ORDER = ["base", "r100", "r200", "r400", "incast", "twojobs", "loss"]


def kv(line):
    return dict(re.findall(r"(\w+)=([^\s]+)", line))


def jain(xs):
    sq = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * sq) if sq else 0.0


def job(path):
    """One job's figures from its output (finished, failed or killed)."""
    out = open(path + ".out").read().splitlines()
    rc = int(open(path + ".rc").read())
    senders = [kv(l) for l in out if l.startswith("link_load: sender ")]
    total = next((kv(l) for l in out if l.startswith("link_load: total ")), None)
    verdict = next((l for l in out if re.match(r"link_load: (PASS|FAIL)", l)), None)
    prog = [kv(l) for l in out if l.startswith("link_load: progress ")]
    rprog = {}  # per rank, its last progress line
    for l in out:
        m = re.match(r"link_load: rank (\d+) progress", l)
        if m:
            rprog[m.group(1)] = kv(l)
    last = prog[-1] if prog else {"t": "0", "delivered": "0", "per_sender": ""}
    t_all = float(last["t"])
    j = {"rc": rc, "p50": None, "p99": None,
         # the whole run by its progress lines (a failed run's dead time counts)
         "t_all": t_all,
         "rate_all": float(last["delivered"]) / t_all if t_all > 0 else 0.0}
    if total and verdict and "PASS" in verdict:
        j["status"] = "ok"
        j["goodput"] = float(total["goodput_MBps"]) * 1e6
        j["shares"] = [float(s["bytes_contended"]) for s in senders]
        j["p50"] = max(float(s["short_p50_us"]) for s in senders) / 1e3
        j["p99"] = max(float(s["short_p99_us"]) for s in senders) / 1e3
    elif total:
        j["goodput"] = j["rate_all"]
        j["shares"] = [float(s["bytes_contended"]) for s in senders]
        v = verdict or "exit %d" % rc
        back = re.search(r"(\d+) messages came back", v)
        if back:
            # the sender gave its peer up (silence past RAMP_PEER_TIMEOUT_MS)
            j["status"] = "collapsed: %s returned, %.1f MB/s over %.0f s" % (
                back.group(1), j["rate_all"] / 1e6, t_all)
        else:
            j["status"] = "FAIL: " + v.replace("link_load: FAIL ", "")[:80]
    else:
        j["goodput"] = j["rate_all"]
        j["shares"] = [float(x) for x in last["per_sender"].split(",") if x]
        j["status"] = "collapsed: killed, %.1f MB/s over %.0f s" % (j["rate_all"] / 1e6, t_all)
    if total:
        wire = sum(float(s["wire_bytes"]) for s in senders)
        j["retx"] = sum(float(s["retx_share"]) * float(s["wire_bytes"]) for s in senders) / max(wire, 1)
    else:
        wire = sum(float(p["wire_bytes"]) for p in rprog.values())
        j["retx"] = sum(float(p["beyond_first"]) for p in rprog.values()) / wire if wire else 0.0
    return j


def qdisc(path):
    backlog, drops = [], 0
    try:
        for l in open(path):
            l = l.strip()
            for q in json.loads(l) if l else []:
                if q.get("kind") == "tbf":
                    backlog.append(q.get("backlog", 0))
                    drops = max(drops, q.get("drops", 0))
    except (OSError, ValueError):
        pass
    return backlog, drops


def one_run(tmp, c, label, k, names):
    """The figures of one run of case c with build label."""
    rate = RATE[c]
    jobs = [job(os.path.join(tmp, n)) for n in names]
    backlog, drops = qdisc(os.path.join(tmp, "%s.%s.%s.qdisc" % (c, label, k)))
    r = {"good": sum(j["goodput"] for j in jobs), "retx": max(j["retx"] for j in jobs),
         "status": "; ".join(j["status"] for j in jobs), "drops": drops, "sock": None}
    try:
        a = [int(x) for x in open(os.path.join(tmp, "%s.%s.%s.sock" % (c, label, k))).read().split()]
        n = len(a) // 2
        r["sock"] = (a[n] - a[0]) + (a[n + 1] - a[1])
        r["reasm"] = a[n + 2] - a[2] if n >= 3 else None
    except (OSError, ValueError, IndexError):
        pass
    if rate:
        r["ratio"] = r["good"] * 8 / rate
        r["each"] = [j["goodput"] * 8 / rate for j in jobs]
        if backlog:
            ms = [b * 8 / rate * 1e3 for b in backlog]
            r["bl_mean"], r["bl_max"] = sum(ms) / len(ms), max(ms)
    if c == "incast":
        r["jain"] = jain(jobs[0]["shares"])
    if c == "twojobs":
        r["jain"] = jain([j["goodput"] for j in jobs])
    p50 = [j["p50"] for j in jobs if j["p50"] is not None]
    p99 = [j["p99"] for j in jobs if j["p99"] is not None]
    if p50 and len(p50) == len(jobs):
        r["p50"], r["p99"] = max(p50), max(p99)
    return r


def med(runs, key):
    xs = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def main():
    tmp = sys.argv[1]
    cases = sys.argv[2].split(",") if len(sys.argv) > 2 else ORDER
    meta = {}
    builds = []
    for l in open(os.path.join(tmp, "meta")):
        k, _, v = l.strip().partition(" ")
        if k == "build":
            builds.append(v.split(" ", 1))
        else:
            meta[k] = v
    groups = {}
    for f in sorted(os.listdir(tmp)):
        m = re.match(r"(\w+)\.([A-Za-z0-9_-]+)\.(\d+)\.(\d+)\.out$", f)
        if m:
            groups.setdefault((m.group(1), m.group(2)), {}).setdefault(
                int(m.group(3)), []).append(f[:-4])
    hdr = ["case", "build", "rate", "goodput MB/s", "good/rate (target)", "retx share (target)",
           "Jain (target)", "short p50/p99 ms", "+delay p50 ms", "tc backlog ms mean/max",
           "tc drops", "sock drops", "reasm fails", "runs"]
    rows = []
    base_p50 = {}
    for c in [c for c in ORDER if c in cases]:
        for label, _ in builds:
            g = groups.get((c, label))
            if not g:
                continue
            runs = [one_run(tmp, c, label, k, sorted(g[k])) for k in sorted(g)]
            rate = RATE[c]
            f2 = lambda x, fmt="{:.2f}": "-" if x is None else fmt.format(x)
            target = {"r100": ">=0.9", "r200": ">=0.9", "r400": ">=0.9", "incast": ">=0.9 sum",
                      "twojobs": ">=0.4 each", "loss": ">=0.7"}.get(c, "")
            if c == "twojobs":
                each = [statistics.median(r["each"][i] for r in runs) for i in range(len(runs[0]["each"]))]
                gr = "/".join("{:.2f}".format(e) for e in each) + " (" + target + ")"
            elif rate:
                gr = "{:.3f} ({})".format(med(runs, "ratio"), target)
            else:
                gr = "-"
            jt = f2(med(runs, "jain"), "{:.3f} (>=0.9)") if c in ("incast", "twojobs") else "-"
            rt = "{:.4f}{}".format(med(runs, "retx"), " (<=0.02)" if c in ("r100", "r200", "r400") else "")
            p50, p99 = med(runs, "p50"), med(runs, "p99")
            if c == "base":
                base_p50[label] = p50
            lat = "-" if p50 is None else "{:.1f}/{:.1f}".format(p50, p99)
            bp = base_p50.get(label)
            delay = "-" if p50 is None or bp is None or c == "base" else "{:.1f}".format(p50 - bp)
            blm, blx = med(runs, "bl_mean"), med(runs, "bl_max")
            bl = "-" if blm is None else "{:.1f}/{:.1f}".format(blm, blx)
            rows.append([c, label, "-" if not rate else "%d Mbit/s" % (rate / 1e6),
                         "{:.2f}".format(med(runs, "good") / 1e6), gr, rt, jt, lat, delay, bl,
                         f2(med(runs, "drops"), "{:.0f}") if rate else "-",
                         f2(med(runs, "sock"), "{:.0f}"),
                         f2(med(runs, "reasm"), "{:.0f}"),
                         " | ".join(r["status"] for r in runs).replace("|", "/")])
    print("# link-bench: %s s of sending per job, medians of %s run(s); load average at the "
          "start and the end: %s" % (meta.get("secs"), meta.get("runs"), meta.get("load")))
    for label, path in builds:
        print("# build %s: %s" % (label, path))
    w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
    for r in [hdr] + rows:
        print("| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(r)) + " |")


if __name__ == "__main__":
    main()
