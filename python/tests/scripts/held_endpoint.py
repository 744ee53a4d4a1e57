"""A Python handler replies (the fast path, which keeps the GIL) while another thread
runs a handler on the same endpoint through AM_Poll (holding the endpoint, needing the
GIL).  With the argument "end" the handler does not reply: its request is ended (the
automatic reply) while the endpoint is held.  Run by test_drain.py in a subprocess
with a timeout: a deadlock between the GIL and the endpoint's lock hangs this script.
Prints "OK" and exits 0 on success."""

from __future__ import annotations

import sys
import threading
import time

import ramp
from ramp import core

TAG = 0x7E57D2A1700AA002
H_PY, H_REP, H_HOLD = 1, 2, 3


def main(mode: str) -> int:
    with ramp.Bundle(ramp.AM_PAR) as b, ramp.Bundle(ramp.AM_SEQ) as b2:
        x, y = b.allocate_endpoint(), b.allocate_endpoint()
        w = b2.allocate_endpoint()
        for ep in (x, y, w):
            ep.tag = TAG
        x.map(0, y.name, TAG)
        y.map(0, x.name, TAG)
        w.map(0, y.name, TAG)
        y.map(1, w.name, TAG)
        for ep in (x, y, w):
            ep.set_expected_resources(0, 8)
        entered, go, held_done = threading.Event(), threading.Event(), threading.Event()
        answers = []

        def hold(tok):  # run by the second thread through AM_Poll: y held meanwhile
            entered.set()
            go.wait(30)
            time.sleep(0.3)  # still holding y while the main thread replies
            held_done.set()

        def second_thread():
            w.request(0, H_HOLD)
            t0 = time.monotonic()
            while not held_done.is_set() and time.monotonic() - t0 < 30:
                core._Fast.am_poll(b._hp)  # AM_Poll: the library runs hold() itself
                b2.poll()

        t = threading.Thread(target=second_thread)

        def on(tok, v):  # played by the main thread's b.wait (drained)
            t.start()
            if not entered.wait(30):
                raise RuntimeError("the second thread never ran its handler")
            go.set()
            if mode == "reply":
                tok.reply(H_REP, v + 1)  # y is held by the second thread now
            else:
                answers.append(v + 1)  # ended when this returns, y held

        y.set_handler(H_PY, on)
        y.set_handler(H_HOLD, hold)
        x.set_handler(H_REP, lambda tok, v: answers.append(v))
        w.set_handler(H_REP, lambda tok, v: None)
        x.request(0, H_PY, 41)
        if not b.wait(lambda: answers and held_done.is_set(), timeout=300):
            print("no reply", file=sys.stderr)
            return 1
        t.join(60)
        if t.is_alive() or not held_done.is_set():
            print("the second thread did not finish", file=sys.stderr)
            return 1
        if answers != [42]:
            print("answers", answers, file=sys.stderr)
            return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "reply"))
