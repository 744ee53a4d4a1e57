"""ramp.names: handler names between endpoints that installed handlers at different
indices, their argument checks, and published names (in a ramp-run job; outside a
job they are a ResourceError)."""

from __future__ import annotations

import os
import sys

import pytest

import ramp
from ramp import names
from conftest import SCRIPTS, TAG, describe, ramp_run, ready


def test_lookup_across_install_orders(pair):
    b, x, y = pair
    got = []
    # x: "ping" at 3, "pong" at 40; y: "pong" at 9 then "ping" at 200
    # a ping replies to the pong index the request carries
    x.set_handler(3, lambda tok, n, pong: tok.reply(pong, n + 1))
    x.set_handler(40, lambda tok, n: got.append(("x", n)))
    y.set_handler(9, lambda tok, n: got.append(("y", n)))
    y.set_handler(200, lambda tok, n, pong: tok.reply(pong, n + 1))
    names.set_handler_name(x, 3, "ping")
    names.set_handler_name(x, 40, "pong")
    names.set_handler_name(y, 9, b"pong")
    names.set_handler_name(y, 200, "ping")
    x.map(1, x.name, TAG)  # x itself: a look-up there needs no message
    ready(x, y)
    h = names.lookup_handler(x, 0, "ping")
    assert h == 200
    assert names.lookup_handler(y, 0, "ping") == 3
    assert names.lookup_handler(x, 0, "ping") == 200  # cached
    x.request(0, h, 41, names.lookup_handler(x, 1, "pong"))  # index 1: x itself
    assert b.wait(lambda: got, timeout=300)
    assert got == [("x", 42)]
    with pytest.raises(ramp.BadArgError):
        names.lookup_handler(x, 0, "missing")
    with pytest.raises(ramp.BadArgError):
        names.lookup_handler(x, 5, "ping")  # not mapped


def test_bad_names(pair):
    b, x, y = pair
    x.set_handler(3, lambda tok: None)
    for bad in ("", "n" * (names.MAX_HANDLER_NAME + 1), "tab\there", b"\xff"):
        with pytest.raises(ramp.BadArgError):
            names.set_handler_name(x, 3, bad)
    names.set_handler_name(x, 3, "~" * names.MAX_HANDLER_NAME)
    with pytest.raises(ramp.BadArgError):
        names.set_handler_name(x, 4, "not installed")
    with pytest.raises(ValueError):
        names.set_handler_name(x, 3, "caf\u00e9")
    with pytest.raises(ValueError):
        names.set_handler_name(x, 3, "nul\0inside")
    with pytest.raises(ValueError):
        names.set_handler_name(x, 256, "x")
    with pytest.raises(TypeError):
        names.set_handler_name(x, 3, 17)  # type: ignore[arg-type]
    ready(x, y)
    with pytest.raises(ramp.BadArgError):
        names.lookup_handler(x, 0, "")


def test_publish_and_lookup_outside_a_job(pair):
    b, x, y = pair
    with pytest.raises(ramp.ResourceError):
        names.publish(x, "svc")
    with pytest.raises(ramp.ResourceError):
        names.lookup("svc", timeout_ms=50)
    with pytest.raises(ramp.BadArgError):
        names.lookup("bad service")
    with pytest.raises(ramp.BadArgError):
        names.lookup("s" * (names.MAX_SERVICE + 1))
    with pytest.raises(ValueError):
        names.lookup("svc", timeout_ms=-1)


def test_names_in_a_job():
    script = os.path.join(SCRIPTS, "names_job.py")
    r = ramp_run(3, sys.executable, script, timeout=180)
    assert r.returncode == 0, describe(r)
    for rank in range(3):
        assert "rank %d names OK" % rank in r.stdout, describe(r)
