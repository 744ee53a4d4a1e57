"""The examples run under the local launcher with 4 processes."""

from __future__ import annotations

import os
import re
import sys

import pytest

from conftest import EXAMPLES, ROOT, describe, ramp_run


def example(name: str) -> str:
    return os.path.join(EXAMPLES, name)


def test_ping():
    r = ramp_run(
        4, sys.executable, example("ping.py"), "--iters", "300", "--warmup", "30", "--size", "512"
    )
    assert r.returncode == 0, describe(r)
    for peer in (1, 2, 3):
        for kind in ("short", "medium"):
            assert re.search(
                r"rank 0 -> rank %d %s +round trip: median +[\d.]+ us" % (peer, kind), r.stdout
            ), describe(r)
    m = re.search(r"ping: python short round-trip median ([\d.]+) us", r.stdout)
    assert m and float(m.group(1)) > 0


def test_ping_single_process_loopback():
    r = ramp_run(1, sys.executable, example("ping.py"), "--iters", "100", "--warmup", "10")
    assert r.returncode == 0 and "rank 0 -> rank 0 short" in r.stdout, describe(r)


def test_wordcount_generated():
    r = ramp_run(4, sys.executable, example("wordcount.py"), "--words", "20000", "--top", "5")
    assert r.returncode == 0, describe(r)
    assert "wordcount: 4 ranks, 80000 words in, 80000 words counted by the owners" in r.stdout
    assert "wordcount: OK" in r.stdout and r.stdout.count("wordcount: ") == 1 + 5 + 1


def test_wordcount_files():
    files = [
        os.path.join(ROOT, "README.md"),
        example("ping.py"),
        example("wordcount.py"),
        example("putget.py"),
    ]
    r = ramp_run(4, sys.executable, example("wordcount.py"), *files)
    assert r.returncode == 0 and "wordcount: OK" in r.stdout, describe(r)


def test_putget():
    pytest.importorskip("numpy")
    r = ramp_run(4, sys.executable, example("putget.py"), "--block", "2048", "--rounds", "50")
    assert r.returncode == 0, describe(r)
    for rank in range(4):
        assert re.search(
            r"putget: rank %d OK: put 4 blocks of 2048 doubles, got rank %d's block from rank %d; "
            r"50 puts of 16 KiB to rank %d: [\d.]+ MB/s"
            % (rank, (rank + 2) % 4, (rank + 1) % 4, (rank + 1) % 4),
            r.stdout,
        ), describe(r)


def test_examples_have_usage():
    import subprocess

    for name in ("ping.py", "wordcount.py", "putget.py"):
        r = subprocess.run(
            [sys.executable, example(name), "--help"], capture_output=True, text=True, timeout=60
        )
        if name == "putget.py" and "needs numpy" in r.stderr:
            continue
        assert r.returncode == 0 and "usage:" in r.stdout, describe(r)


def test_ping_plain_loop():
    # ping.py --plain: rank 0 awaits each reply with a loop of ep.poll()
    r = ramp_run(
        2, sys.executable, example("ping.py"), "--iters", "200", "--warmup", "20", "--plain"
    )
    assert r.returncode == 0, describe(r)
    assert "python (plain poll loop), 2 rank(s)" in r.stdout, describe(r)
    assert re.search(r"ping: python-plain short round-trip median [\d.]+ us", r.stdout), describe(r)


def test_ping_pair_with_its_floor():
    # python/examples/ping_pair.sh: the C and Python pings, and with --floor the C ping
    # over the drain calls (c/drain_ping.c) and the raw-ctypes Python ping (raw_ping.py,
    # also with the GIL kept); with --plain the plain loop and its floor; --python picks
    # the interpreter
    import subprocess

    r = subprocess.run(
        ["bash", example("ping_pair.sh"), "--runs", "1", "--iters", "200", "--warmup", "20"]
        + ["--no-pin", "--floor", "--plain", "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, describe(r)
    num = r"[\d.]+ us"
    assert re.search(r"medians of 1 runs .*: C %s, Python %s, difference [+-]" % (num, num), r.stdout)
    assert re.search(
        r"floor: C drain %s \([+-][\d.]+ us to C\), raw Python %s \([+-][\d.]+ us to C\): "
        r"the package adds [+-][\d.]+ us to the raw floor" % (num, num),
        r.stdout,
    ), describe(r)
    assert re.search(r"floor with the GIL kept in every call: raw Python %s" % num, r.stdout)
    assert re.search(r"plain loop \(ep.poll\(\)\): Python %s, difference [+-]" % num, r.stdout)
    assert re.search(r"plain loop floor: raw Python %s" % num, r.stdout), describe(r)
    assert "ping_pair: Python %s %s" % (sys.version.split()[0], sys.executable) in r.stdout


def test_ping_pair_refuses_a_missing_interpreter():
    import subprocess

    r = subprocess.run(
        ["bash", example("ping_pair.sh"), "--python", "/nonexistent/python3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "no interpreter /nonexistent/python3" in r.stderr, describe(r)


def test_critical_path_measures_each_span():
    # python/examples/critical_path.py: the package's hot path with the C calls stubbed;
    # each span must have been seen (a stub that was never reached would print 0)
    import subprocess

    r = subprocess.run(
        [sys.executable, example("critical_path.py"), "--iters", "2000", "--runs", "1", "--raw"]
        + ["--cycles"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, describe(r)
    spans = ("client recv", "client send", "server", "plain recv", "raw recv", "raw send")
    cycles = ("cycle client", "cycle plain", "cycle server", "cycle raw client")
    for span in spans + ("raw server",) + cycles + ("cycle raw server",):
        m = re.search(r"critical_path: %s +(\d+) ns" % span, r.stdout)
        assert m and 0 < int(m.group(1)) < 1_000_000, describe(r)
