"""A peer's paths (rails): ``ramp_GetPeerPaths`` (include/ramp.h "paths") as dicts.

``Endpoint.peer_paths(dest)`` is the call; this module holds the decoding."""

from __future__ import annotations

from ctypes import byref, c_size_t
from typing import Any, Dict, List

from ._base import EndpointName, _check, _L
from ._lib import ramp_path_t

#: ``ramp_path_t.state`` values (``RAMP_PATH_*``), by name.
PATH_STATES = {0: "unconfirmed", 1: "active", 2: "failed", 3: "probing", 4: "suspect"}
RAMP_PATH_UNCONFIRMED, RAMP_PATH_ACTIVE, RAMP_PATH_FAILED, RAMP_PATH_PROBING = 0, 1, 2, 3
#: active, but its timeouts moved its traffic to another path until its heartbeat answers
RAMP_PATH_SUSPECT = 4


def path_to_dict(p: ramp_path_t) -> Dict[str, Any]:
    """One ``ramp_path_t`` as a dict: ``local`` and ``remote`` are EndpointNames,
    ``state`` the name ("unconfirmed", "active", "failed", "probing", "suspect": active
    but its timeouts moved its traffic elsewhere until its heartbeat answers), ``current`` a
    bool, the figures ints (``srtt_ns`` 0 when not measured, ``rate`` bytes/s: the
    measured delivery rate where one exists, else cwnd / srtt)."""
    return {
        "rail": int(p.rail),
        "local": EndpointName(p.local),
        "remote": EndpointName(p.remote),
        "state": PATH_STATES.get(int(p.state), "unknown"),
        "srtt_ns": int(p.srtt_ns),
        "cwnd": int(p.cwnd),
        "rate": int(p.rate),
        "bytes_sent": int(p.bytes_sent),
        "bytes_acked": int(p.bytes_acked),
        "errors": int(p.errors),
        "failures": int(p.failures),
        "current": bool(p.current),
    }


def peer_paths(handle: Any, dest: Any) -> List[Dict[str, Any]]:
    """``ramp_GetPeerPaths`` on endpoint handle ``handle`` for the peer ``dest`` (an
    EndpointName): every path, asked again with a larger array if it has more."""
    count = c_size_t(0)
    size = 8
    while True:
        arr = (ramp_path_t * size)()
        _check(_L().ramp_GetPeerPaths(handle, dest._en, arr, size, byref(count)), "ramp_GetPeerPaths")
        if count.value <= size:
            return [path_to_dict(arr[i]) for i in range(count.value)]
        size = count.value
