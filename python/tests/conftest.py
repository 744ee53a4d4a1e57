"""Test set-up: the library under test, the package under test, helpers.

* The package is the source tree's (python/ramp), first on sys.path and on the
  PYTHONPATH of every process the tests start.
* The library is target/release/libramp.so of this repository (RAMP_LIB, unless
  RAMP_LIB is already set).  When it is missing the tests build it with
  `cargo build --release`; only when that is impossible are the tests that need it
  skipped, with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(TESTS)
ROOT = os.path.dirname(PYDIR)
RELEASE = os.path.join(ROOT, "target", "release")
BUILT_LIB = os.path.join(RELEASE, "libramp.so")
RAMP_RUN = os.path.join(RELEASE, "ramp-run")
EXAMPLES = os.path.join(PYDIR, "examples")
SCRIPTS = os.path.join(TESTS, "scripts")
BY_RANK = os.path.join(EXAMPLES, "by_rank.sh")
INCLUDE = os.path.join(ROOT, "include")

sys.path.insert(0, PYDIR)
os.environ["PYTHONPATH"] = PYDIR + (
    os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""
)


def _ensure_library() -> Optional[str]:
    """Returns None when the library is there (building it if needed), else why not."""
    if os.environ.get("RAMP_LIB"):
        return (
            None
            if os.path.exists(os.environ["RAMP_LIB"])
            else "RAMP_LIB=%s does not exist" % os.environ["RAMP_LIB"]
        )
    if not (os.path.exists(BUILT_LIB) and os.path.exists(RAMP_RUN)):
        cargo = shutil.which("cargo")
        if cargo is None:
            return "%s is missing and cargo is not installed to build it" % BUILT_LIB
        r = subprocess.run([cargo, "build", "--release"], cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(BUILT_LIB):
            return "cargo build --release failed:\n%s" % r.stderr[-3000:]
    os.environ["RAMP_LIB"] = BUILT_LIB
    return None


LIB_PROBLEM = _ensure_library()
LIB = os.environ.get("RAMP_LIB", BUILT_LIB)


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    if LIB_PROBLEM is None:
        return
    skip = pytest.mark.skip(reason="libramp.so unavailable: " + LIB_PROBLEM)
    for item in items:
        if "nolib" not in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nolib: the test does not need libramp.so")


TAG = 0x5EED


@pytest.fixture
def pair() -> Iterator[Tuple[object, object, object]]:
    """A bundle with two endpoints a and b, each mapped to the other at index 0 (tag TAG),
    ready to send (depth 16)."""
    import ramp

    with ramp.Bundle() as b:
        x, y = b.allocate_endpoint(), b.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        yield b, x, y


def ready(*eps: object, depth: int = 16) -> None:
    for ep in eps:
        ep.set_expected_resources(0, depth)  # type: ignore[attr-defined]


def run(
    cmd: List[str], timeout: float = 180, env: Optional[Dict[str, str]] = None, cwd: str = ROOT
) -> subprocess.CompletedProcess:
    """Runs a command, returns the completed process (text output)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)


def ramp_run(
    n: int, *cmd: str, timeout: float = 180, env: Optional[Dict[str, str]] = None
) -> subprocess.CompletedProcess:
    """`ramp-run -n N cmd...`."""
    return run([RAMP_RUN, "-n", str(n), *cmd], timeout=timeout, env=env)


def compile_c(src: str, out_dir: str, name: str) -> str:
    """Compiles a C program against include/ and the library; returns the executable."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build %s" % os.path.basename(src))
    libdir = os.path.dirname(os.path.realpath(LIB))
    exe = os.path.join(out_dir, name)
    r = subprocess.run(
        [
            cc,
            "-O2",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            src,
            "-I",
            INCLUDE,
            "-L",
            libdir,
            "-lramp",
            "-Wl,-rpath," + libdir,
            "-o",
            exe,
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, "compiling %s failed:\n%s" % (src, r.stderr)
    return exe


def describe(r: subprocess.CompletedProcess) -> str:
    return "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (r.returncode, r.stdout, r.stderr)
