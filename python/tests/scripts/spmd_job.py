"""A 4-process SPMD job exercising every SPMD call and every message category between
all ranks (run by test_spmd.py under ramp-run).  Prints "rank R OK" and exits 0."""

from __future__ import annotations

import os
import struct
import sys

import ramp
from ramp import spmd

H_SHORT, H_SHORT_R, H_MED, H_MED_R, H_LONG, H_LONG_R, H_BOOM = 1, 2, 3, 4, 5, 6, 7
SLOT = 256


class Boom(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        print("rank %s FAILED: %s" % (os.environ.get("RAMP_SPMD_RANK"), what), file=sys.stderr)
        sys.exit(1)


def main() -> int:
    try:
        spmd.my_proc()
        check(False, "my_proc before startup")
    except ramp.NotInitError:
        pass
    check(spmd.is_worker(), "is_worker")
    job = spmd.startup()
    check(spmd.startup() is job and spmd.job() is job, "startup twice")
    rank, size = job.rank, job.size
    ep = job.endpoint
    check(size == 4 and spmd.num_procs() == 4 and spmd.my_proc() == rank, "rank/size")
    # the launcher's own rank variable: ramp-run, srun, Open MPI's mpirun (PMIx)
    launcher_rank = next(
        os.environ[k] for k in ("RAMP_SPMD_RANK", "SLURM_PROCID", "PMIX_RANK") if k in os.environ
    )
    check(rank == int(launcher_rank), "rank matches the launcher's")
    check(repr(job) == "<ramp.spmd.Job rank %d of 4>" % rank, "repr")
    check(spmd.process_label() == "Node %d" % rank, "process label %r" % spmd.process_label())
    check(job.getenv_master("RAMP_PYTEST_MARK") == "hello-from-the-launcher", "getenv_master")
    check(spmd.getenv_master("RAMP_PYTEST_NO_SUCH_VARIABLE") is None, "getenv_master missing")
    check(
        spmd.env_with_prefix("RAMP_PYTEST_MAR") == ("RAMP_PYTEST_MARK", "hello-from-the-launcher"),
        "env_with_prefix",
    )
    check(spmd.env_with_prefix("RAMP_PYTEST_NOPE_") is None, "env_with_prefix missing")
    check([a for a, _ in spmd.spawners()][:2] == ["S", "L"], "spawners %r" % spmd.spawners())
    check(
        ep.num_translations >= size and all(ep.translation_in_use(r) for r in range(size)),
        "translations",
    )
    check(ep.name == ep.translation_name(rank), "own name")
    check(job.bundle.endpoints == [ep] and job.network_pid != 0, "job objects")
    spmd.set_polite_sync(False)
    spmd.set_silent_mode(False)
    ep.close()  # the job's endpoint: closing it does nothing
    job.bundle.close()
    check(not ep.closed, "job endpoint survives close")

    seg = bytearray(SLOT * size * 2)
    ep.set_segment(seg)
    got = {
        "short": set(),
        "short_r": set(),
        "med": set(),
        "med_r": set(),
        "long": set(),
        "long_r": set(),
    }

    def on_short(tok, a, b):
        check(tok.source_id == a and b == a * a, "short args")
        got["short"].add(a)
        tok.reply(H_SHORT_R, rank, a)

    def on_short_r(tok, r, a):
        check(tok.source_id == r and a == rank and not tok.is_request, "short reply")
        got["short_r"].add(r)

    def on_med(tok, buf: memoryview, a):
        check(bytes(buf) == b"medium %d" % a and tok.source_id == a, "medium payload")
        got["med"].add(a)
        tok.reply_medium(H_MED_R, bytes(buf).upper(), rank)

    def on_med_r(tok, buf: memoryview, r):
        check(bytes(buf) == b"MEDIUM %d" % rank, "medium reply")
        got["med_r"].add(r)

    def on_long(tok, buf: memoryview, a):
        check(
            bytes(buf) == bytes([a]) * SLOT and seg[a * SLOT : (a + 1) * SLOT] == bytes([a]) * SLOT,
            "long data",
        )
        got["long"].add(a)
        tok.reply_long(H_LONG_R, bytes([100 + rank]) * SLOT, (size + rank) * SLOT, rank)

    def on_long_r(tok, buf: memoryview, r):
        check(bytes(buf) == bytes([100 + r]) * SLOT, "long reply")
        got["long_r"].add(r)

    def on_boom(tok):
        raise Boom("raised in a handler on rank %d" % rank)

    for h, f in (
        (H_SHORT, on_short),
        (H_SHORT_R, on_short_r),
        (H_MED, on_med),
        (H_MED_R, on_med_r),
        (H_LONG, on_long),
        (H_LONG_R, on_long_r),
        (H_BOOM, on_boom),
    ):
        ep.set_handler(h, f)
    job.barrier()

    for r in range(size):  # including ourselves (loopback)
        ep.request(r, H_SHORT, rank, rank * rank)
        ep.request_medium(r, H_MED, b"medium %d" % rank, rank)
        ep.request_long(r, H_LONG, bytes([rank]) * SLOT, rank * SLOT, rank)
    everyone = set(range(size))
    ok = ep.wait(lambda: all(v == everyone for v in got.values()), timeout=120)
    check(ok, "all-to-all incomplete: %r" % got)

    # exceptions raised by handlers come out of the SPMD calls that ran them
    raised = []

    def guarded_barrier() -> None:
        try:
            job.barrier()
        except Boom as e:
            raised.append(str(e))

    guarded_barrier()  # everyone is done with the all-to-all
    if rank == 0:
        ep.request(1, H_BOOM)
    guarded_barrier()
    guarded_barrier()
    if rank == 1 and not raised:
        try:
            ep.wait(timeout=300)
        except Boom as e:
            raised.append(str(e))
    check(raised == (["raised in a handler on rank 1"] if rank == 1 else []), "raised %r" % raised)

    # all-gather
    parts = job.allgather(struct.pack("<iq", rank, rank * 10**12))
    check(
        [struct.unpack("<iq", p) for p in parts] == [(r, r * 10**12) for r in range(size)],
        "allgather",
    )
    dest = bytearray(3 * size)
    spmd.allgather_into(memoryview(bytes([rank] * 3)), dest)
    check(dest == b"".join(bytes([r] * 3) for r in range(size)), "allgather_into")
    try:
        import numpy as np

        arr = np.zeros((size, 2), dtype=np.int64)
        spmd.allgather_into(np.array([rank, -rank], dtype=np.int64), arr)
        check(arr.tolist() == [[r, -r] for r in range(size)], "allgather_into numpy")
    except ImportError:
        pass
    for bad in (
        lambda: spmd.allgather_into(b"ab", bytearray(3)),
        lambda: spmd.allgather(b""),
        lambda: spmd.allgather_into(b"ab", bytes(2 * size)),
    ):
        try:
            bad()
            check(False, "bad all-gather accepted")
        except (ValueError, TypeError):
            pass

    st = ep.statistics()
    check(
        st["RequestsSent"] == (size + (1 if rank == 0 else 0), size, size),
        "statistics %r" % (st["RequestsSent"],),
    )
    job.barrier()
    print("rank %d OK" % rank)
    if sys.argv[1:] == ["exit"]:
        # Open MPI's mpirun takes a rank that ends without finalizing its PMIx client
        # (returning instead of spmd.exit) for an abnormal termination: exit 1
        sys.stdout.flush()
        spmd.exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
