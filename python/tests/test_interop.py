"""A C process and Python processes in one job exchange every message category both ways."""

from __future__ import annotations

import os
import sys

import pytest

from conftest import BY_RANK, EXAMPLES, SCRIPTS, TESTS, compile_c, describe, ramp_run

CLIENT = os.path.join(SCRIPTS, "interop_client.py")


@pytest.mark.parametrize("n", [2, 4])
def test_c_server_python_clients(tmp_path, n):
    """Rank 0 runs tests/c/interop.c, ranks 1..n-1 run interop_client.py: short (3 and 16
    args), medium and long requests each way, with short, medium and long replies, and a
    returned message (EBADHANDLER) each way."""
    exe = compile_c(os.path.join(TESTS, "c", "interop.c"), str(tmp_path), "interop")
    r = ramp_run(n, BY_RANK, exe, "--", sys.executable, CLIENT)
    assert r.returncode == 0, describe(r)
    lines = r.stdout.split("\n")
    assert "interop: C OK: served %d python client(s) and got every reply" % (n - 1) in lines, (
        describe(r)
    )
    for rank in range(1, n):
        assert any(line.startswith("interop: python rank %d OK" % rank) for line in lines), (
            describe(r)
        )


def test_ping_c_and_python_in_one_job(tmp_path):
    """The C and Python ping programs answer each other (same handlers, same protocol)."""
    exe = compile_c(os.path.join(EXAMPLES, "c", "ping.c"), str(tmp_path), "ping_c")
    ping = os.path.join(EXAMPLES, "ping.py")
    r = ramp_run(
        3,
        BY_RANK,
        exe,
        "--iters",
        "200",
        "--warmup",
        "10",
        "--size",
        "100",
        "--",
        sys.executable,
        ping,
    )
    assert r.returncode == 0, describe(r)
    assert "ping: c short round-trip median" in r.stdout
    assert r.stdout.count("medium round trip") == 2
    r = ramp_run(2, BY_RANK, sys.executable, ping, "--iters", "200", "--warmup", "10", "--", exe)
    assert r.returncode == 0 and "ping: python short round-trip median" in r.stdout, describe(r)


def test_by_rank_usage():
    r = ramp_run(1, BY_RANK, "true")
    assert r.returncode == 2 and "usage" in r.stderr
    import subprocess

    r = subprocess.run(
        [BY_RANK, "a", "--", "b"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "RAMP_SPMD_RANK"},
    )
    assert r.returncode == 2 and "RAMP_SPMD_RANK" in r.stderr
