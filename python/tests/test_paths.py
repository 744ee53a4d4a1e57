"""Endpoint.peer_paths (``ramp_GetPeerPaths``): a peer's paths as dicts."""

from __future__ import annotations

import pytest

import ramp
from conftest import ready


def test_peer_paths_after_an_exchange(pair):
    b, x, y = pair
    answers = []
    y.set_handler(1, lambda tok, n: tok.reply(2, n + 1))
    x.set_handler(2, lambda tok, n: answers.append(n))
    ready(x, y)
    for k in range(20):
        x.request(0, 1, k)
    assert b.wait(lambda: len(answers) == 20, timeout=300)
    paths = x.peer_paths(y.name)
    # one rail each (RAMP_RAILS unset): one path, from our name to the peer's
    assert len(paths) == 1, paths
    p = paths[0]
    assert p["rail"] == 0
    assert p["state"] == "active"
    assert p["current"] is True
    assert p["remote"] == y.name
    assert p["local"] == x.name
    assert p["cwnd"] > 0 and p["errors"] == 0 and p["failures"] == 0
    assert set(p) == {
        "rail", "local", "remote", "state", "srtt_ns", "cwnd", "rate",
        "bytes_sent", "bytes_acked", "errors", "failures", "current",
    }
    # the other side sees its path to x too
    assert [q["state"] for q in y.peer_paths(x.name)] == ["active"]


def test_peer_paths_of_no_peer_is_a_bad_argument(pair):
    b, x, y = pair
    ready(x, y)
    with pytest.raises(ramp.BadArgError):
        x.peer_paths(x.name)


def test_every_path_state_has_its_name_and_suspect_decodes():
    from ramp import paths
    from ramp._lib import ramp_path_t

    # ramp.h's RAMP_PATH_* in order, RAMP_PATH_SUSPECT (4) last
    assert paths.PATH_STATES == {
        0: "unconfirmed", 1: "active", 2: "failed", 3: "probing", 4: "suspect",
    }
    assert paths.RAMP_PATH_SUSPECT == 4
    p = ramp_path_t()
    p.state = paths.RAMP_PATH_SUSPECT
    assert paths.path_to_dict(p)["state"] == "suspect"
    p.state = 99
    assert paths.path_to_dict(p)["state"] == "unknown"
