"""Calls every public function and method of the package (its bundles,
endpoints, and the ramp, ramp.rma, ramp.txn and ramp.names functions) with
random hostile arguments: None, negative and huge integers, NaN, strings,
bytes of every size, other objects.  Every call must return or raise a Python
exception with a message; a crash (a signal from the C side) ends this
process, which the test that runs it sees.  Prints, last, one line:
``CALLS n EXCEPTIONS {type: count}`` and any exception of a type that says
nothing of the argument (``ODD name type message``).

Usage: hostile_args.py SEED
"""

from __future__ import annotations

import inspect
import random
import sys

import ramp
from ramp import names, rma, txn

SKIP = {
    # block until something happens, or end the process's use of the library
    "close", "terminate", "init", "wait", "wait_flag", "block", "wait_sema",
    "poll_block", "lookup", "lookup_handler", "run",
}
# exception types that describe a bad argument
CLEAR = (TypeError, ValueError, OverflowError, ramp.RampError, KeyError)

rng = random.Random(int(sys.argv[1]))
VALUES = [None, -1, 0, 1, 7, 255, 256, 65536, 2**31, -2**31 - 1, 2**63, -2**63, 2**64 + 5,
          1e300, float("nan"), True, "x", "", b"", b"\x00" * 70000, bytearray(3),
          memoryview(b"abc"), [], {}, (1, 2), object()]
calls, seen = 0, {}


def arity(f) -> int:
    try:
        ps = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return 2
    return len([p for p in ps if p.default is p.empty
                 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def hit(f, name: str) -> None:
    global calls
    n = arity(f)
    for _ in range(8):
        args = [rng.choice(VALUES) for _ in range(max(0, n + rng.randint(-1, 2)))]
        calls += 1
        try:
            f(*args)
        except Exception as e:  # noqa: BLE001 - what the sweep is about
            t = type(e).__name__
            seen[t] = seen.get(t, 0) + 1
            if not isinstance(e, CLEAR) or not str(e):
                print("ODD", name, t, repr(str(e))[:200], [type(a).__name__ for a in args])


def public(o):
    for name in dir(o):
        if name.startswith("_") or name in SKIP:
            continue
        try:
            f = getattr(o, name)
        except Exception:  # noqa: BLE001 - a property of a closed object
            continue
        if callable(f) and not inspect.isclass(f):
            yield name, f


with ramp.Bundle() as b:
    a, c = b.allocate_endpoint(), b.allocate_endpoint()
    for ep, peer in ((a, c), (c, a)):
        ep.tag = 0x5EED
        ep.map(0, peer.name, 0x5EED)
        ep.set_expected_resources(depth=8)
    a.set_handler(1, lambda tok, x: None)
    for o in (b, a, c, ramp):
        for name, f in public(o):
            hit(f, name)
    for mod in (rma, txn, names):
        for name, f in inspect.getmembers(mod, inspect.isfunction):
            if not name.startswith("_") and name not in SKIP:
                hit(f, name)
print("CALLS", calls, "EXCEPTIONS", seen)
