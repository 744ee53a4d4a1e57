"""SPMD start-up and exit paths, one per mode (argv[1]); run by test_spmd.py.

exit3      rank 1 calls ramp.spmd.exit(3) (exit callback prints); the job exits 3
raise      rank 2 raises; the job stops with a non-zero code
fatal      rank 0 calls ramp.spmd.fatal_error("boom")
master     started WITHOUT a launcher: startup(nproc=3) makes this process the launcher
notworker  started without a launcher and without nproc: startup() raises RampError
"""

from __future__ import annotations

import sys

import ramp
from ramp import spmd


def main() -> int:
    mode = sys.argv[1]
    if mode == "notworker":
        try:
            spmd.startup()
        except ramp.RampError as e:
            print("notworker: %s" % e)
            return 0
        return 1
    job = spmd.startup(nproc=3 if mode == "master" else None)
    if mode == "master":
        job.barrier()
        print("master-form rank %d of %d" % (job.rank, job.size))
        return 0
    spmd.set_exit_callback(
        lambda code: print("exit callback on rank %d: code %d" % (job.rank, code))
    )
    spmd.set_exit_callback(None)
    spmd.set_exit_callback(
        lambda code: print("exit callback on rank %d: code %d" % (job.rank, code))
    )
    job.barrier()
    if mode == "exit3" and job.rank == 1:
        print("rank 1 exits with 3")
        job.exit(3)
    if mode == "raise" and job.rank == 2:
        raise RuntimeError("rank 2 gives up")
    if mode == "fatal" and job.rank == 0:
        spmd.fatal_error("boom")
    job.barrier()  # the others wait here until the launcher stops the job
    print("rank %d should not get here" % job.rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
