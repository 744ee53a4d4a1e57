"""SPMD jobs under the local launcher (ramp-run), with Python ranks."""

from __future__ import annotations

import os
import re
import sys

import pytest

import ramp
from conftest import ROOT, SCRIPTS, describe, ramp_run

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
        timeout=300,
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


# ---- the same Python job under the launchers of a batch system --------------------------
# srun (Slurm, --mpi=pmi2 and --mpi=pmix) and Open MPI's mpirun (PMIx); each is skipped,
# with the reason, where it cannot run (scripts/test-all.sh brings up a one-node Slurm with
# scripts/slurm.sh up and installs openmpi-bin).  srun gets -K (--kill-on-bad-exit): a rank
# that dies takes the job down instead of leaving the others waiting.
MPIRUN_OPENMPI = "/usr/bin/mpirun.openmpi"
FOREIGN = {
    "srun-pmi2": ["srun", "-O", "-K", "--mpi=pmi2", "-n"],
    "srun-pmix": ["srun", "-O", "-K", "--mpi=pmix", "-n"],
    "mpirun": [MPIRUN_OPENMPI, "--allow-run-as-root", "--oversubscribe", "-n"],
}
_why_not: dict = {}


def _cannot_run(launcher: str):
    """Why `launcher` cannot run here, or None (probed once per launcher)."""
    import subprocess

    if launcher in _why_not:
        return _why_not[launcher]
    why = None
    if launcher.startswith("srun"):
        r = subprocess.run(
            ["bash", os.path.join(ROOT, "scripts", "slurm.sh"), "check"],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            why = "no working Slurm here: " + (r.stderr.strip().splitlines() or ["?"])[0]
        elif launcher[5:] not in r.stdout:
            why = "this Slurm has no mpi/%s plugin" % launcher[5:]
    elif not os.access(MPIRUN_OPENMPI, os.X_OK):
        why = "Open MPI's mpirun is not installed (apt-get install openmpi-bin)"
    _why_not[launcher] = why
    return why


def _foreign(launcher: str, n: int, *cmd: str, env=None):
    import subprocess

    why = _cannot_run(launcher)
    if why is not None:
        pytest.skip("%s: %s" % (launcher, why))
    e = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAMP_SPMD_", "PMI", "SLURM_", "OMPI_"))
    }
    e.update(env or {})
    return subprocess.run(
        FOREIGN[launcher] + [str(n), *cmd], capture_output=True, text=True, timeout=180, env=e
    )


@pytest.mark.parametrize("launcher", sorted(FOREIGN))
def test_four_process_job_under(launcher):
    """The job of test_four_process_job, unchanged, under srun (pmi2, pmix) and mpirun;
    ending with spmd.exit(0) (mpirun fails a rank that returns without finalizing)."""
    r = _foreign(
        launcher,
        4,
        sys.executable,
        JOB,
        "exit",
        env={"RAMP_PYTEST_MARK": "hello-from-the-launcher"},
    )
    assert r.returncode == 0, describe(r)
    # Open MPI's output forwarding may join two ranks' lines ("rank 1 OKrank 0 OK"):
    # count the reports, not the lines.
    reports = re.findall(r"rank (\d+) OK", r.stdout)
    assert sorted(reports) == [str(i) for i in range(4)], describe(r)


@pytest.mark.parametrize("launcher", sorted(FOREIGN))
def test_exit_code_under(launcher):
    """spmd.exit(3) on rank 1 is the launcher's exit status."""
    r = _foreign(launcher, 3, sys.executable, MODES, "exit3")
    assert r.returncode == 3, describe(r)
    assert "rank 1 exits with 3" in r.stdout, describe(r)
    assert "should not get here" not in r.stdout, describe(r)
