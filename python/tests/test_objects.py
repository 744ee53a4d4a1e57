"""Bundles, endpoints, translation tables, names, statistics, constants, library functions."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import pytest

import ramp
from conftest import INCLUDE, TAG, compile_c, ready
from ramp import _lib


def test_bundle_and_endpoint_lifecycle():
    with ramp.Bundle() as b:
        assert not b.closed and b.mode == ramp.AM_SEQ and b.handle
        assert "AM_SEQ" in repr(b)
        with b.allocate_endpoint() as e1:
            e2 = ramp.Endpoint(b)
            assert set(b.endpoints) == {e1, e2}
            assert e1.bundle is b and e1.handle != e2.handle and not e1.closed
            assert e1.name != e2.name and "Endpoint" in repr(e1)
        assert e1.closed and b.endpoints == [e2] and repr(e1) == "<ramp.Endpoint (closed)>"
        e1.close()  # idempotent
        with pytest.raises(ramp.RampError, match="closed"):
            e1.tag = 1
        with pytest.raises(ramp.RampError, match="closed"):
            e1.request(0, 1)
    assert b.closed and e2.closed and repr(b) == "<ramp.Bundle (closed)>"
    b.close()
    b.free()
    with pytest.raises(ramp.RampError, match="closed"):
        b.poll()
    with pytest.raises(ramp.RampError, match="closed"):
        b.allocate_endpoint()


def test_name_of_an_endpoint_made_elsewhere():
    # an endpoint handle made outside the package (as ramp_SPMDStartup makes one) gets
    # its name from the library (ramp_GetEndpointName)
    with ramp.Bundle() as b:
        with b.allocate_endpoint() as e:
            alias = ramp.Endpoint._wrap(e.handle, b)
            assert alias._name is None and alias.name == e.name


def test_bad_bundle_mode():
    with pytest.raises(ramp.BadArgError):
        ramp.Bundle(7)


def test_move_endpoint():
    with ramp.Bundle() as b1, ramp.Bundle() as b2:
        ep = b1.allocate_endpoint()
        ep.move(b2)
        assert ep.bundle is b2 and b2.endpoints == [ep] and b1.endpoints == []
        # the C call refuses to move an endpoint from a bundle it is not in
        assert _lib.lib().AM_MoveEndpoint(ep.handle, b1.handle, b2.handle) == ramp.AM_ERR_RESOURCE
        b1.close()
        assert not ep.closed
    assert ep.closed


def test_tag(pair):
    b, x, y = pair
    assert x.tag == TAG
    x.tag = 2**64 - 1
    assert x.tag == 2**64 - 1


def test_translation_table():
    with ramp.Bundle() as b:
        x, y = b.allocate_endpoint(), b.allocate_endpoint()
        assert x.num_translations == 256
        x.num_translations = 1024
        assert x.num_translations == 1024
        x.num_translations = 10  # raised to 256
        assert x.num_translations == 256
        assert not x.translation_in_use(3)
        x.map(3, y.name, 77)
        assert x.translation_in_use(3)
        assert x.translation_tag(3) == 77 and x.translation_name(3) == y.name
        with pytest.raises(ramp.ResourceError):
            x.map(3, y.name, 77)  # already mapped
        i = x.map_any(y.name, 78)
        assert i == 0 and x.translation_tag(0) == 78
        x.unmap(0)
        assert not x.translation_in_use(0)
        with pytest.raises(ramp.ResourceError):
            x.unmap(0)
        with pytest.raises(ramp.ResourceError):
            x.translation_tag(0)
        with pytest.raises(ramp.ResourceError):
            x.translation_name(0)
        with pytest.raises(ramp.BadArgError):
            x.map(256, y.name, 1)
        with pytest.raises(ramp.BadArgError):
            x.translation_in_use(-1)
        ready(x)
        with pytest.raises(ramp.ResourceError):
            x.map(5, y.name, 1)  # frozen after set_expected_resources
        with pytest.raises(ramp.ResourceError):
            x.set_expected_resources(0, 4)  # only once
        x.set_translation_tag(3, 99)
        assert x.translation_tag(3) == 99


def test_endpoint_name(pair):
    b, x, y = pair
    n = x.name
    s = str(n)
    assert re.fullmatch(r"(\d+\.\d+\.\d+\.\d+|\[[0-9a-f:]+\]):\d+", s), s
    assert repr(n) == "EndpointName(%r)" % s
    raw = n.to_bytes()
    assert len(raw) == ramp.EndpointName.SIZE == 32 and bytes(n) == raw
    m = ramp.EndpointName.from_bytes(raw)
    assert m == n and hash(m) == hash(n) and not (m != n)
    assert m != y.name and len({n, m, y.name}) == 2
    assert (n == "x") is False
    with pytest.raises(ValueError, match="32 bytes"):
        ramp.EndpointName(b"short")


def test_handler_registration_forms(pair):
    b, x, y = pair

    target = []

    @y.handler(9)
    def nine(tok, a):
        tok.reply(target[0], a + 1)

    @y.handler()
    def anywhere(tok, buf: memoryview, a):
        pass

    got = []
    i = x.set_handler_any(lambda tok, v: got.append(v))
    target.append(i)
    assert nine.am_handler == 9 and y.handlers[9] == (nine, "short", 1)
    assert 1 <= anywhere.am_handler <= 255 and y.handlers[anywhere.am_handler][1:] == ("bulk", 1)
    ready(x, y)
    x.request(0, 9, 1)
    # replace x's handler while it could be running: the old callback stays alive
    x.set_handler(i, lambda tok, v: got.append(-v))
    assert b.wait(lambda: got, timeout=300)
    assert got == [-2]


def test_string_annotations():
    """Handlers from modules using `from __future__ import annotations` (annotations are strings)."""
    ns: dict = {}
    exec(
        "from __future__ import annotations\ndef h(tok, buf: memoryview, a, b):\n    pass\n",
        ns,
    )
    from ramp.core import _resolve_kind

    assert _resolve_kind(ns["h"], None, None) == ("bulk", 2)


def test_event_mask_and_waits(pair):
    b, x, y = pair
    assert b.event_mask == ramp.AM_NOEVENTS
    b.event_mask = ramp.AM_NOTEMPTY
    assert b.event_mask == ramp.AM_NOTEMPTY
    with pytest.raises(ramp.BadArgError):
        b.event_mask = 5
    got = []
    y.set_handler(1, lambda tok: got.append(1))
    ready(x, y)
    assert b.wait(timeout=0.05) is False  # nothing arrives
    assert x.wait(lambda: False, timeout=0.05) is False
    x.request(0, 1)
    b.wait_sema()  # sleeps until the request arrives, then polls
    assert b.wait(lambda: got, timeout=300)
    x.request(0, 1)
    assert b.wait() is True  # without until: until a Python handler has run
    x.request(0, 1)
    assert x.wait(lambda: len(got) == 3, spin=0)  # block in AM_WaitSema at once
    x.poll()
    y.poll()


def test_wait_sema_without_ready_endpoint():
    with ramp.Bundle() as b:
        b.allocate_endpoint()
        with pytest.raises(ramp.NotInitError):
            b.wait_sema()


def test_statistics(pair):
    b, x, y = pair
    y.set_handler(1, lambda tok, buf: tok.reply(2), kind="medium", nargs=0)
    done = []
    x.set_handler(2, lambda tok: done.append(1))
    ready(x, y)
    for _ in range(5):
        x.request_medium(0, 1, b"12345678")
    assert b.wait(lambda: len(done) == 5, timeout=300)
    s = x.statistics()
    assert len(s) == 38 and s["RequestsSent"] == (0, 5, 0) and s["RequestDataBytesSent"][1] == 40
    assert s["RepliesReceived"][0] >= 5 and s["TotalBytesSent"] > 40
    t = y.statistics()
    assert t["RequestsReceived"][1] >= 5 and t["RepliesSent"][0] == 5
    total = ramp.aggregate_statistics(s, t)
    assert (
        total["RequestsSent"][1] == 5
        and total["TotalBytesSent"] == s["TotalBytesSent"] + t["TotalBytesSent"]
    )
    init = ramp.initial_statistics()
    assert init["RequestMinLatency"] == 2**64 - 1 and init["RttMinNs"] == 2**64 - 1
    assert init["RequestsSent"] == (0, 0, 0)
    assert ramp.aggregate_statistics() == init
    text = ramp.format_statistics(total)
    assert isinstance(text, str) and text
    assert isinstance(ramp.format_statistics(total, global_analysis=True), str)
    with pytest.raises(KeyError):
        ramp.format_statistics({"RequestsSent": (0, 0, 0)})
    x.reset_statistics()
    assert x.statistics()["RequestsSent"] == (0, 0, 0)
    st = _lib.ramp_stats_t()
    assert ramp.statistics_to_dict(st)["TotalBytesSent"] == 0


def test_library_functions():
    assert re.fullmatch(r"\d+\.\d+\.\d+", ramp.version())
    info = ramp.library_info()
    assert isinstance(info, ramp.LibraryInfo) and os.path.exists(info.path)
    assert (
        info.source in ("RAMP_LIB", "package", "system", "ramp-run")
        and info.version == ramp.version()
    )
    assert ramp.error_name(ramp.AM_ERR_BAD_ARG) == "AM_ERR_BAD_ARG"
    assert ramp.error_name(1234) == "AM_ERR_UNKNOWN"
    assert ramp.status_name(ramp.EBADTAG) == "EBADTAG"
    assert ramp.status_name(0) == "EUNKNOWN"
    assert ramp.max_seg_length() >= 2**31
    ramp.set_verbose_errors(True)
    ramp.set_verbose_errors(False)
    ramp.init()
    ramp.terminate()
    assert ramp.__version__ == ramp.version()


def test_terminate_frees_everything():
    b = ramp.Bundle()
    ep = b.allocate_endpoint()
    ramp.terminate()  # undoes the Bundle's AM_Init: the last one frees everything
    assert b.closed and ep.closed
    b1, b2 = ramp.Bundle(), ramp.Bundle()
    e2 = b2.allocate_endpoint()
    ramp.terminate()  # one of the two AM_Init: nothing freed yet
    assert not b1.closed and not b2.closed
    b1.close()  # the last AM_Terminate: b2 goes too
    assert b2.closed and e2.closed
    b2.close()


def _header_defines():
    out = {}
    for h in ("am.h", "ramp.h"):
        with open(os.path.join(INCLUDE, h)) as f:
            for m in re.finditer(r"^#define\s+(\w+)\s+(\d+)\b", f.read(), re.M):
                out[m.group(1)] = int(m.group(2))
    return out


def test_constants_match_headers():
    d = _header_defines()
    names = [n for n in ramp.constants.__all__ if n.isupper() and n in d]
    assert len(names) >= 25
    for n in names:
        assert int(getattr(ramp, n)) == d[n], n
    assert ramp.MAX_SHORT == 16 and ramp.MAX_MEDIUM == 65000 and ramp.MAX_LONG == 1048576
    assert ramp.MAX_NUM_HANDLERS == 256 and ramp.MAX_NUM_TRANSLATIONS == 1 << 20
    assert ramp.MAX_NETWORK_DEPTH == 1024
    for cat, n in (("SHORT", 0), ("MEDIUM", 1), ("LONG", 2)):
        assert ramp.Category[cat] == n
    assert ramp.ErrorCode.AM_OK == ramp.AM_OK == 0
    assert ramp.BundleMode.AM_PAR == ramp.AM_PAR and ramp.EventMask.AM_NOTEMPTY == ramp.AM_NOTEMPTY
    assert ramp.Opcode.AM_REPLY_IM.category == ramp.Category.MEDIUM
    assert not ramp.Opcode.AM_REPLY_IM.is_request


LAYOUT_C = r"""
#include <stddef.h>
#include <stdio.h>
#include "ramp.h"
#define F(f) printf("%s %zu\n", #f, offsetof(ramp_stats_t, f));
int main(void) {
  printf("sizeof %zu\nen_t %zu\n", sizeof(ramp_stats_t), sizeof(en_t));
  FIELDS
  return 0;
}
"""


def test_struct_layout_matches_the_header():
    """ctypes' ramp_stats_t and en_t have the C layout of include/ramp.h."""
    fields = [n for n, _ in _lib.ramp_stats_t._fields_]
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "layout.c")
        with open(src, "w") as f:
            f.write(LAYOUT_C.replace("FIELDS", " ".join("F(%s)" % n for n in fields)))
        exe = compile_c(src, d, "layout")
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
    got = dict(line.split() for line in out if line)
    import ctypes

    assert int(got.pop("sizeof")) == ctypes.sizeof(_lib.ramp_stats_t)
    assert int(got.pop("en_t")) == ctypes.sizeof(_lib.en_t)
    for n in fields:
        assert int(got[n]) == getattr(_lib.ramp_stats_t, n).offset, n


def test_status_and_opcode_names():
    statuses = [
        ramp.EBADARGS,
        ramp.EBADENTRY,
        ramp.EBADTAG,
        ramp.EBADHANDLER,
        ramp.EBADSEGOFF,
        ramp.EBADLENGTH,
        ramp.EBADENDPOINT,
        ramp.ECONGESTION,
        ramp.EUNREACHABLE,
        ramp.EREPLYREJECTED,
    ]
    assert [int(s) for s in statuses] == list(range(1, 11))
    for s in statuses:
        assert ramp.status_name(s) == s.name and ramp.Status(int(s)) is s
    opcodes = [
        ramp.AM_REQUEST_M,
        ramp.AM_REQUEST_IM,
        ramp.AM_REQUEST_XFER_M,
        ramp.AM_REPLY_M,
        ramp.AM_REPLY_IM,
        ramp.AM_REPLY_XFER_M,
    ]
    assert [int(o) for o in opcodes] == list(range(1, 7))
    assert [o.category for o in opcodes] == [
        ramp.Category.SHORT,
        ramp.Category.MEDIUM,
        ramp.Category.LONG,
    ] * 2
    assert [o.is_request for o in opcodes] == [True] * 3 + [False] * 3
    codes = [
        ramp.AM_OK,
        ramp.AM_ERR_NOT_INIT,
        ramp.AM_ERR_BAD_ARG,
        ramp.AM_ERR_RESOURCE,
        ramp.AM_ERR_NOT_SENT,
        ramp.AM_ERR_IN_USE,
    ]
    assert [ramp.error_name(c) for c in codes] == [c.name for c in codes]


def test_handler_type_aliases(pair):
    b, x, y = pair
    got = []
    on_short: ramp.HandlerFunction = lambda tok, v: got.append(v)
    on_returned: ramp.ErrorHandlerFunction = lambda status, opcode, tok: got.append(status)
    y.set_handler(1, on_short)
    x.set_error_handler(on_returned)
    ready(x, y)
    x.request(0, 1, 5)
    x.request(0, 2)
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert sorted(got) == [ramp.EBADHANDLER, 5]
