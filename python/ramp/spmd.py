"""SPMD jobs (include/ramp_spmd.h): start-up, rank, size, barrier, all-gather, exit.

Start a job with ramp's launcher, one process per rank::

    ramp-run -n 4 python3 my_job.py args...

and call :func:`startup` first in every process::

    import ramp
    job = ramp.spmd.startup()
    ep = job.endpoint              # translation index i = rank i, tag set, resources set
    ep.set_handler(1, on_ping)
    ...
    job.barrier()

A process not started by a launcher can become the launcher itself (AMUDP's master
form): ``startup(nproc=4)`` starts 4 workers running this script with the same
arguments, serves them, and exits with the job's exit code (it never returns).

Process output: workers' output is routed through the launcher.  Python buffers
stdout when it is a pipe, so :func:`barrier`, :func:`exit` and :func:`startup` flush
``sys.stdout`` and ``sys.stderr`` (as the C library flushes C stdio); run
``python3 -u`` for unbuffered output.  A worker may end by returning normally (exit
code 0, the job goes on with the others), by raising (a non-zero exit code stops
the whole job) or with :func:`exit`, which ends this process at once (Python's
``atexit`` handlers do not run) and makes ``code`` the job's exit code.
"""

from __future__ import annotations

import ctypes
import sys
from ctypes import byref, c_char_p, c_int, c_uint64, c_void_p
from typing import Callable, List, NoReturn, Optional, Sequence, Tuple

from . import _lib
from ._buffers import BufferLike, SendBuffer
from ._lib import EXIT_CALLBACK_PROTO, spawnfn_desc_t
from .constants import ErrorCode
from .core import Bundle, Endpoint, _after, _check
from .errors import NotInitError, RampError

__all__ = [
    "Job",
    "startup",
    "job",
    "is_worker",
    "my_proc",
    "num_procs",
    "barrier",
    "allgather",
    "allgather_into",
    "exit",
    "set_exit_callback",
    "getenv_master",
    "env_with_prefix",
    "spawners",
    "set_polite_sync",
    "set_silent_mode",
    "process_label",
    "fatal_error",
]


class Job:
    """This process's part of an SPMD job (what :func:`startup` returns).

    ``endpoint`` maps translation index i to rank i; its tag and resources are set.
    The bundle and endpoint belong to the job: closing them does nothing.
    """

    def __init__(
        self, rank: int, size: int, bundle: Bundle, endpoint: Endpoint, network_pid: int
    ) -> None:
        #: This process's rank, 0..size-1.
        self.rank = rank
        #: Number of processes in the job.
        self.size = size
        #: The job's bundle (poll it, or the endpoint).
        self.bundle = bundle
        #: The job's endpoint: translation index i is rank i.
        self.endpoint = endpoint
        #: The job's network pid (the tags derive from it).
        self.network_pid = network_pid

    def barrier(self) -> None:
        """:func:`barrier`."""
        barrier()

    def allgather(self, data: BufferLike) -> List[bytes]:
        """:func:`allgather`."""
        return allgather(data)

    def allgather_into(self, source: BufferLike, dest: BufferLike) -> None:
        """:func:`allgather_into`."""
        allgather_into(source, dest)

    def exit(self, code: int = 0) -> NoReturn:
        """:func:`exit`."""
        exit(code)

    def getenv_master(self, name: str) -> Optional[str]:
        """:func:`getenv_master`."""
        return getenv_master(name)

    def __repr__(self) -> str:
        return "<ramp.spmd.Job rank %d of %d>" % (self.rank, self.size)


_job: Optional[Job] = None
_exit_cb: object = None


def _flush() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass


def _spawner_fn(letter: str) -> int:
    for abbrev, _desc, fn in _spawner_table():
        if abbrev.upper() == letter.upper():
            return fn
    raise ValueError(
        "unknown spawner %r (known: %s)" % (letter, ", ".join(a for a, _, _ in _spawner_table()))
    )


def _spawner_table() -> List[Tuple[str, str, int]]:
    lib = _lib.lib()
    first = spawnfn_desc_t.in_dll(lib, "ramp_Spawnfn_Desc")
    base = ctypes.addressof(first)
    out = []
    for i in range(64):
        d = spawnfn_desc_t.from_address(base + i * ctypes.sizeof(spawnfn_desc_t))
        if d.abbrev in (b"\0", b""):
            break
        out.append((d.abbrev.decode(), (d.desc or b"").decode(), d.fnptr or 0))
    return out


def spawners() -> List[Tuple[str, str]]:
    """``ramp_Spawnfn_Desc``: the spawners the master form knows, as (letter, description)."""
    return [(a, d) for a, d, _ in _spawner_table()]


def is_worker() -> bool:
    """``ramp_SPMDIsWorker``: whether this process is (or was started as) a worker of a job."""
    return bool(_lib.lib().ramp_SPMDIsWorker(None))


def startup(
    depth: int = 0,
    nproc: Optional[int] = None,
    spawner: Optional[str] = None,
    argv: Optional[Sequence[str]] = None,
) -> Job:
    """``ramp_SPMDStartup``: joins the job this process was started in; returns the :class:`Job`.

    ``depth``: network depth (credits per peer), 0 for the launcher's choice.
    When the process was not started by a launcher (ramp-run, mpiexec, srun):
    with ``nproc`` it becomes the launcher of ``nproc`` workers running
    ``python3 <argv...>`` (default: this script and its arguments, ``sys.argv``) and
    never returns; without it, raises :class:`RampError` saying how to start a job.
    ``spawner``: a letter of :func:`spawners` for that case (default ``"L"``, local).
    Calling it twice returns the same job.
    """
    global _job
    if _job is not None:
        return _job
    lib = _lib.lib()
    if not lib.ramp_SPMDIsWorker(None):
        if nproc is None:
            raise RampError(
                "this process was not started by an SPMD launcher; run it as "
                "`ramp-run -n N %s %s` (or pass nproc= to make this process the launcher)"
                % (sys.executable, " ".join(sys.argv) or "script.py")
            )
        if int(nproc) < 1:
            raise ValueError("nproc must be at least 1")
        args = [sys.executable] + list(sys.argv if argv is None else argv)
    else:
        args = [sys.executable] + list(sys.argv)
    c_args = (c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    argc = c_int(len(args))
    argvp = ctypes.cast(c_args, ctypes.POINTER(c_char_p))
    eb, ep, pid = c_void_p(), c_void_p(), c_uint64()
    spawnfn = _spawner_fn(spawner) if spawner else None
    _flush()
    rc = lib.ramp_SPMDStartup(
        byref(argc),
        byref(argvp),
        int(nproc or 0),
        int(depth),
        spawnfn,
        byref(pid),
        byref(eb),
        byref(ep),
    )
    _check(rc, "ramp_SPMDStartup")
    rank = lib.ramp_SPMDMyProc()
    size = lib.ramp_SPMDNumProcs()
    bundle = Bundle._wrap(eb.value or 0)
    endpoint = Endpoint._wrap(ep.value or 0, bundle)
    _job = Job(rank, size, bundle, endpoint, pid.value)
    return _job


def job() -> Job:
    """The job :func:`startup` joined (NotInitError before)."""
    if _job is None:
        raise NotInitError(
            ErrorCode.AM_ERR_NOT_INIT, "ramp.spmd.job", "call ramp.spmd.startup() first"
        )
    return _job


def my_proc() -> int:
    """``ramp_SPMDMyProc``: this process's rank (NotInitError before :func:`startup`)."""
    job()
    return int(_lib.lib().ramp_SPMDMyProc())


def num_procs() -> int:
    """``ramp_SPMDNumProcs``: the number of ranks (NotInitError before :func:`startup`)."""
    job()
    return int(_lib.lib().ramp_SPMDNumProcs())


def barrier() -> None:
    """``ramp_SPMDBarrier``: waits for every rank; handlers keep running meanwhile.

    Flushes ``sys.stdout`` and ``sys.stderr`` first."""
    job()
    _flush()
    rc = _lib.lib().ramp_SPMDBarrier()
    _after(rc, "ramp_SPMDBarrier")


def allgather_into(source: BufferLike, dest: BufferLike) -> None:
    """``ramp_SPMDAllGather``: ``dest`` (writable, ``len(source) * size`` bytes) receives every
    rank's ``source`` bytes in rank order.  Every rank must give the same length."""
    j = job()
    with SendBuffer(source) as s:
        n = s.nbytes
        mv = memoryview(dest)
        if mv.readonly or not mv.c_contiguous:
            raise TypeError("dest must be a writable C-contiguous buffer")
        if mv.nbytes != n * j.size:
            raise ValueError(
                "dest holds %d bytes; it must hold %d (len(source) * size)"
                % (mv.nbytes, n * j.size)
            )
        if n == 0:
            raise ValueError("all-gather of zero bytes")
        flat = mv.cast("B") if (mv.ndim != 1 or mv.format != "B") else mv
        d = (ctypes.c_char * flat.nbytes).from_buffer(flat)
        rc = _lib.lib().ramp_SPMDAllGather(s.ptr, d, n)
        del d
    _after(rc, "ramp_SPMDAllGather")


def allgather(data: BufferLike) -> List[bytes]:
    """``ramp_SPMDAllGather``: every rank gives ``data`` (the same length everywhere);
    returns the list of every rank's bytes, in rank order."""
    j = job()
    n = memoryview(data).nbytes
    out = bytearray(n * j.size)
    allgather_into(data, out)
    return [bytes(out[i * n : (i + 1) * n]) for i in range(j.size)]


def exit(code: int = 0) -> NoReturn:  # noqa: A001 - the C name
    """``ramp_SPMDExit``: ends this process and the job with exit code ``code``.

    Flushes Python's stdout/stderr first; runs the exit callback; ``atexit`` handlers
    do not run.  Does not return."""
    job()
    _flush()
    rc = _lib.lib().ramp_SPMDExit(int(code))
    _check(rc, "ramp_SPMDExit")
    raise SystemExit(code)  # not reached


def set_exit_callback(fn: Optional[Callable[[int], None]]) -> None:
    """``ramp_SPMDSetExitCallback``: ``fn(code)`` runs when this process ends through :func:`exit`
    (or the launcher stops the job).  ``None`` removes it."""
    global _exit_cb
    lib = _lib.lib()
    if fn is None:
        _check(lib.ramp_SPMDSetExitCallback(None), "ramp_SPMDSetExitCallback")
        _exit_cb = None
        return

    def cb(code: int) -> None:
        try:
            fn(code)
        except BaseException:  # cannot propagate: the process is ending
            import traceback

            traceback.print_exc()
        _flush()

    c = EXIT_CALLBACK_PROTO(cb)
    _check(lib.ramp_SPMDSetExitCallback(ctypes.cast(c, c_void_p)), "ramp_SPMDSetExitCallback")
    _exit_cb = c


def getenv_master(name: str) -> Optional[str]:
    """``ramp_SPMDgetenvMaster``: ``name``'s value in the launcher's environment, or None."""
    r = _lib.lib().ramp_SPMDgetenvMaster(name.encode())
    return None if r is None else r.decode("utf-8", "replace")


def env_with_prefix(prefix: str) -> Optional[Tuple[str, str]]:
    """``ramp_check_env_prefix``: the first (name, value) of the launcher's environment whose
    name starts with ``prefix``, or None."""
    r = _lib.lib().ramp_check_env_prefix(prefix.encode())
    if r is None:
        return None
    k, _, v = r.decode("utf-8", "replace").partition("=")
    return k, v


def set_polite_sync(on: bool) -> None:
    """``ramp_PoliteSync``: sleep instead of spinning while waiting for send credits."""
    c_int.in_dll(_lib.lib(), "ramp_PoliteSync").value = 1 if on else 0


def set_silent_mode(on: bool) -> None:
    """``ramp_SilentMode``: suppress the library's informational output."""
    c_int.in_dll(_lib.lib(), "ramp_SilentMode").value = 1 if on else 0


def process_label() -> Optional[str]:
    """``ramp_ProcessLabel``: this process's label in messages (workers: ``"Node <rank>"``)."""
    v = c_char_p.in_dll(_lib.lib(), "ramp_ProcessLabel").value
    return None if v is None else v.decode("utf-8", "replace")


def fatal_error(message: str) -> NoReturn:
    """``ramp_FatalErr``: prints ``*** FATAL ERROR: message`` (with the process label) and
    aborts the process.  Does not return."""
    _flush()
    f = _lib.lib().ramp_FatalErr
    f.restype = None
    f(c_char_p(b"%s"), c_char_p(message.encode()))
    raise SystemExit(134)  # not reached
