"""A logged transaction target for test_txn.py's kill -9 test: keeps its
transactions in RAMP_T_LOG, maps the parent (RAMP_T_PARENT, its name in hex) at
index 0, prints its own name, and runs handler 30 (appends "ran <a>" to
RAMP_T_EFFECTS, then replies with handler 31) until it is killed."""

import os
import sys
import time

import ramp
from ramp import txn

TAG = 0x5EED


def main() -> None:
    b = ramp.Bundle()
    ep = b.allocate_endpoint()
    txn.log_open(ep, os.environ["RAMP_T_LOG"])
    ep.tag = TAG
    ep.map(0, ramp.EndpointName.from_bytes(bytes.fromhex(os.environ["RAMP_T_PARENT"])), TAG)
    ep.set_expected_resources(0, 16)
    effects = os.environ["RAMP_T_EFFECTS"]

    def h(tok, a):
        with open(effects, "a") as f:
            f.write("ran %d\n" % a)
        time.sleep(0.0005)  # kills land between the effect and the reply too
        tok.reply(31, a)

    ep.set_handler(30, h)
    print("NAME", bytes(ep.name).hex(), flush=True)
    t0 = time.time()
    while time.time() - t0 < 100:
        b.poll()
        time.sleep(0.0001)


if __name__ == "__main__":
    main()
    sys.exit(0)
