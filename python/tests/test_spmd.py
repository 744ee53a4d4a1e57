"""SPMD jobs under the local launcher (ramp-run), with Python ranks."""

from __future__ import annotations

import os
import sys

import pytest

import ramp
from conftest import SCRIPTS, describe, ramp_run

JOB = os.path.join(SCRIPTS, "spmd_job.py")
MODES = os.path.join(SCRIPTS, "spmd_modes.py")


def test_four_process_job():
    """4 Python ranks: rank/size, barrier, all-gather, launcher environment, every message
    category between every pair of ranks (and to themselves), exceptions from handlers."""
    r = ramp_run(4, sys.executable, JOB, env={"RAMP_PYTEST_MARK": "hello-from-the-launcher"})
    assert r.returncode == 0, describe(r)
    assert sorted(r.stdout.split("\n")[:-1]) == ["rank %d OK" % i for i in range(4)], describe(r)


def test_exit_code_and_callback():
    r = ramp_run(3, sys.executable, MODES, "exit3", timeout=120)
    assert r.returncode == 3, describe(r)
    assert "rank 1 exits with 3" in r.stdout and "exit callback on rank 1: code 3" in r.stdout
    assert "should not get here" not in r.stdout


def test_raising_rank_stops_the_job():
    r = ramp_run(3, sys.executable, MODES, "raise", timeout=120)
    assert r.returncode != 0, describe(r)
    assert "RuntimeError: rank 2 gives up" in r.stderr and "rank 2" in r.stderr
    assert "should not get here" not in r.stdout


def test_fatal_error():
    r = ramp_run(2, sys.executable, MODES, "fatal", timeout=120)
    assert r.returncode != 0, describe(r)
    assert "*** FATAL ERROR (Node 0): boom" in r.stderr, describe(r)


def _no_launcher_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("RAMP_SPMD_", "PMI_"))}


def test_master_form():
    """Not started by a launcher, startup(nproc=3) makes the process the launcher."""
    import subprocess

    r = subprocess.run(
        [sys.executable, MODES, "master"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_no_launcher_env(),
    )
    assert r.returncode == 0, describe(r)
    assert sorted(r.stdout.split("\n")[:-1]) == [
        "master-form rank %d of 3" % i for i in range(3)
    ], describe(r)


def test_not_started_by_a_launcher():
    import subprocess

    r = subprocess.run(
        [sys.executable, MODES, "notworker"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_no_launcher_env(),
    )
    assert (
        r.returncode == 0
        and "not started by an SPMD launcher" in r.stdout
        and "ramp-run -n N" in r.stdout
    ), describe(r)


def test_calls_before_startup():
    from ramp import spmd

    if spmd._job is not None:
        pytest.skip("this process is an SPMD worker")
    assert not spmd.is_worker()
    for f in (
        spmd.my_proc,
        spmd.num_procs,
        spmd.barrier,
        spmd.job,
        lambda: spmd.exit(0),
        lambda: spmd.allgather(b"x"),
    ):
        with pytest.raises(ramp.NotInitError):
            f()
    assert spmd.getenv_master("PATH") is None and spmd.env_with_prefix("PA") is None
    with pytest.raises(ValueError):
        spmd.startup(nproc=0)
    with pytest.raises(ValueError, match="unknown spawner"):
        spmd._spawner_fn("Q")
