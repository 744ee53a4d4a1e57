"""Finding and loading libramp.so, and the ctypes prototypes of its C API.

Search order (the first that loads and exports ramp's symbols wins):

1. ``RAMP_LIB``: an explicit path to the library (or to a directory holding
   ``libramp.so.0`` / ``libramp.so``).  When it is set and fails, nothing else is
   tried: an explicit choice that does not work is an error, not a hint.
2. The package's own copy, ``ramp/_lib/libramp.so.0``, placed there when the
   package was built from a source tree with a built library
   (``pip install ./python`` after ``cargo build --release``) or by
   ``python -m ramp.install_lib``.
3. The system's loader path: ``libramp.so.0`` through ``dlopen`` (``LD_LIBRARY_PATH``,
   the ldconfig cache, the default directories), then ``ctypes.util.find_library``.
4. Beside the ``ramp-run`` launcher -- the one that started this process (the parent
   process), then the one on ``PATH``: ``<bin>/../lib/libramp.so.0`` (an installation
   by scripts/install.sh PREFIX) and ``<bin>/libramp.so.0`` (a cargo
   ``target/release`` directory).

The library is loaded lazily, on first use, so ``import ramp`` never fails.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_int,
    c_int32,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .errors import LibraryNotFoundError

SONAME = "libramp.so.0"
PACKAGE_LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib")

# --------------------------------------------------------------------------------------
# C types
# --------------------------------------------------------------------------------------


class en_t(Structure):
    """``en_t``: an endpoint name, 32 opaque bytes passed by value."""

    _fields_ = [("_opaque", c_uint64 * 4)]


_ARRAY_FIELDS = (
    "RequestsSent",
    "RepliesSent",
    "RequestsRetransmitted",
    "RepliesRetransmitted",
    "RepliesSquashed",
    "RequestsReceived",
    "RepliesReceived",
)
_FIELDS: List[Any] = [(n, c_uint64 * 3) for n in _ARRAY_FIELDS]
_FIELDS += [(n, c_uint64) for n in ("ReturnedMessages", "OutOfOrderRequests", "OutOfOrderReplies")]
_FIELDS += [(n, c_uint64) for n in ("RequestMinLatency", "RequestMaxLatency", "RequestSumLatency")]
_FIELDS += [
    (n, c_uint64 * 3)
    for n in (
        "RequestDataBytesSent",
        "ReplyDataBytesSent",
        "RequestTotalBytesSent",
        "ReplyTotalBytesSent",
    )
]
_FIELDS += [
    (n, c_uint64)
    for n in (
        "TotalBytesSent",
        "RequestLatencySamples",
        "PacketsSent",
        "PacketsReceived",
        "PacketsRetransmitted",
        "AcksSent",
        "AcksReceived",
        "NacksSent",
        "NacksReceived",
        "DuplicatesDropped",
        "CorruptDropped",
        "StaleDropped",
        "RttMinNs",
        "RttMaxNs",
        "RttSumNs",
        "RttSamples",
        "CcReductions",
        "CcRandomLosses",
        "CcTimeouts",
        "CcUndone",
        "CcPaced",
    )
]


class ramp_stats_t(Structure):
    """``ramp_stats_t`` (include/ramp.h): 60 uint64_t counters."""

    _fields_ = _FIELDS


class ramp_path_t(Structure):
    """``ramp_path_t`` (include/ramp.h): one path to a peer (``ramp_GetPeerPaths``)."""

    _fields_ = [
        ("local", en_t),
        ("remote", en_t),
        ("rail", c_uint32),
        ("state", c_int),
        ("srtt_ns", c_uint64),
        ("cwnd", c_uint64),
        ("rate", c_uint64),
        ("bytes_sent", c_uint64),
        ("bytes_acked", c_uint64),
        ("errors", c_uint32),
        ("failures", c_uint32),
        ("current", c_int),
        ("reserved", c_uint32),
    ]


class Py_buffer(Structure):
    """CPython's ``Py_buffer`` (stable layout since Python 3.3)."""

    _fields_ = [
        ("buf", c_void_p),
        ("obj", c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", c_int),
        ("ndim", c_int),
        ("format", c_char_p),
        ("shape", c_void_p),
        ("strides", c_void_p),
        ("suboffsets", c_void_p),
        ("internal", c_void_p),
    ]


class spawnfn_desc_t(Structure):
    """One entry of ``ramp_Spawnfn_Desc``."""

    _fields_ = [("abbrev", c_char), ("desc", c_char_p), ("fnptr", c_void_p)]


# Handler prototypes: what ramp calls, by category and arity.
SHORT_PROTOS = [CFUNCTYPE(None, c_void_p, *([c_int32] * n)) for n in range(17)]
BULK_PROTOS = [CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, *([c_int32] * n)) for n in range(17)]
RETURNED_PROTO = CFUNCTYPE(None, c_int, c_int, c_void_p)
EXIT_CALLBACK_PROTO = CFUNCTYPE(None, c_int)

_I = c_int
_P = c_void_p
_PROTOTYPES = {
    # am.h
    "AM_Init": (_I, []),
    "AM_Terminate": (_I, []),
    "AM_AllocateBundle": (_I, [c_int, POINTER(c_void_p)]),
    "AM_FreeBundle": (_I, [_P]),
    "AM_AllocateEndpoint": (_I, [_P, POINTER(c_void_p), POINTER(en_t)]),
    "AM_FreeEndpoint": (_I, [_P]),
    "AM_MoveEndpoint": (_I, [_P, _P, _P]),
    "AM_GetSeg": (_I, [_P, POINTER(c_void_p), POINTER(c_size_t)]),
    "AM_SetSeg": (_I, [_P, _P, c_size_t]),
    "AM_MaxSegLength": (_I, [POINTER(c_size_t)]),
    "AM_GetTag": (_I, [_P, POINTER(c_uint64)]),
    "AM_SetTag": (_I, [_P, c_uint64]),
    "AM_Map": (_I, [_P, c_int, en_t, c_uint64]),
    "AM_MapAny": (_I, [_P, POINTER(c_int), en_t, c_uint64]),
    "AM_UnMap": (_I, [_P, c_int]),
    "AM_GetNumTranslations": (_I, [_P, POINTER(c_int)]),
    "AM_SetNumTranslations": (_I, [_P, c_int]),
    "AM_GetTranslationInuse": (_I, [_P, c_int]),
    "AM_GetTranslationTag": (_I, [_P, c_int, POINTER(c_uint64)]),
    "AM_GetTranslationName": (_I, [_P, c_int, POINTER(en_t)]),
    "AM_SetExpectedResources": (_I, [_P, c_int, c_int]),
    "_AM_SetHandler": (_I, [_P, c_uint8, _P]),
    "_AM_SetHandlerAny": (_I, [_P, POINTER(c_uint8), _P]),
    "AM_GetEventMask": (_I, [_P, POINTER(c_int)]),
    "AM_SetEventMask": (_I, [_P, c_int]),
    "AM_WaitSema": (_I, [_P]),
    "AM_GetSourceEndpoint": (_I, [_P, POINTER(en_t)]),
    "AM_GetDestEndpoint": (_I, [_P, POINTER(c_void_p)]),
    "AM_GetMsgTag": (_I, [_P, POINTER(c_uint64)]),
    "AM_Poll": (_I, [_P]),
    # ramp.h
    "ramp_GetSourceId": (_I, [_P, POINTER(c_int)]),
    "ramp_GetTokenInfo": (_I, [_P, POINTER(c_uint8), POINTER(c_int), POINTER(c_int)]),
    "ramp_GetTokenArgCount": (_I, [_P, POINTER(c_int)]),
    "ramp_GetEndpointName": (_I, [_P, _P]),
    "ramp_enEqual": (_I, [en_t, en_t]),
    "ramp_enToString": (_I, [en_t, _P, c_size_t]),
    "ramp_SetTranslationTag": (_I, [_P, c_int, c_uint64]),
    "ramp_ErrorName": (c_char_p, [c_int]),
    "ramp_StatusName": (c_char_p, [c_int]),
    "ramp_Version": (c_char_p, []),
    "ramp_LastError": (c_char_p, []),
    "ramp_GetEndpointStatistics": (_I, [_P, POINTER(ramp_stats_t)]),
    "ramp_GetPeerPaths": (_I, [_P, en_t, POINTER(ramp_path_t), c_size_t, POINTER(c_size_t)]),
    "ramp_ResetEndpointStatistics": (_I, [_P]),
    "ramp_AggregateStatistics": (_I, [POINTER(ramp_stats_t), POINTER(ramp_stats_t)]),
    "ramp_DumpStatistics": (c_char_p, [_P, POINTER(ramp_stats_t), c_int]),
    "ramp_RequestArgv": (
        _I,
        [_P, c_uint32, c_uint8, c_int, _P, c_size_t, c_size_t, c_int, c_int, POINTER(c_int32)],
    ),
    "ramp_ReturnMessage": (_I, [_P, c_int]),
    "ramp_ReplyArgv": (_I, [_P, c_uint8, c_int, _P, c_size_t, c_size_t, c_int, POINTER(c_int32)]),
    # ramp_spmd.h
    "ramp_SPMDStartup": (
        _I,
        [
            POINTER(c_int),
            POINTER(POINTER(c_char_p)),
            c_int,
            c_int,
            _P,
            POINTER(c_uint64),
            POINTER(c_void_p),
            POINTER(c_void_p),
        ],
    ),
    "ramp_SPMDExit": (_I, [c_int]),
    "ramp_SPMDSetExitCallback": (_I, [_P]),
    "ramp_SPMDIsWorker": (_I, [_P]),
    "ramp_SPMDNumProcs": (_I, []),
    "ramp_SPMDMyProc": (_I, []),
    "ramp_SPMDBarrier": (_I, []),
    "ramp_SPMDAllGather": (_I, [_P, _P, c_size_t]),
    "ramp_SPMDgetenvMaster": (c_char_p, [c_char_p]),
    "ramp_check_env_prefix": (c_char_p, [c_char_p]),
}

# Python C API helpers (zero-copy buffer access without a compiled extension).
_pyapi = ctypes.pythonapi
PyObject_GetBuffer = _pyapi.PyObject_GetBuffer
PyObject_GetBuffer.argtypes = [ctypes.py_object, POINTER(Py_buffer), c_int]
PyObject_GetBuffer.restype = c_int
PyBuffer_Release = _pyapi.PyBuffer_Release
PyBuffer_Release.argtypes = [POINTER(Py_buffer)]
PyBuffer_Release.restype = None
PyMemoryView_FromMemory = _pyapi.PyMemoryView_FromMemory
PyMemoryView_FromMemory.argtypes = [c_void_p, ctypes.c_ssize_t, c_int]
PyMemoryView_FromMemory.restype = ctypes.py_object
PyBUF_READ = 0x100
PyBUF_WRITE = 0x200
PyBUF_SIMPLE = 0
PyBUF_WRITABLE = 0x0001
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES

# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


class LibraryInfo(NamedTuple):
    """Which libramp.so was loaded, from where, and why."""

    path: str
    """Absolute path of the loaded file."""
    source: str
    """How it was found: ``"RAMP_LIB"``, ``"package"``, ``"system"`` or ``"ramp-run"``."""
    reason: str
    """A sentence saying where it was found."""
    version: str
    """What ``ramp_Version()`` returns."""
    tried: Tuple[Tuple[str, str], ...]
    """Every place tried before it, with its outcome."""


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_info: Optional[LibraryInfo] = None


def _loaded_path(lib: ctypes.CDLL, fallback: str) -> str:
    """The file a loaded library came from (dladdr, else /proc/self/maps)."""

    class Dl_info(Structure):
        _fields_ = [
            ("dli_fname", c_char_p),
            ("dli_fbase", c_void_p),
            ("dli_sname", c_char_p),
            ("dli_saddr", c_void_p),
        ]

    addr = ctypes.cast(lib.ramp_Version, c_void_p).value
    for name in (None, "libdl.so.2"):
        try:
            dladdr = ctypes.CDLL(name).dladdr
        except (OSError, AttributeError):
            continue
        dladdr.argtypes = [c_void_p, POINTER(Dl_info)]
        dladdr.restype = c_int
        info = Dl_info()
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and "libramp" in parts[-1]:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    if addr is not None and lo <= addr < hi:
                        return parts[-1]
    except OSError:
        pass
    return fallback


def _try(path_or_name: str) -> Tuple[Optional[ctypes.CDLL], str]:
    """Loads one candidate; returns (library, "") or (None, why not)."""
    try:
        lib = ctypes.CDLL(path_or_name)
    except OSError as e:
        return None, str(e)
    for sym in ("ramp_RequestArgv", "AM_Poll", "ramp_Version"):
        if not hasattr(lib, sym):
            return None, "loaded, but it does not export %s: not ramp's library" % sym
    return lib, ""


def _files_in(d: str) -> List[str]:
    return [os.path.join(d, SONAME), os.path.join(d, "libramp.so")]


def _search() -> Tuple[ctypes.CDLL, str, str, str, List[Tuple[str, str]]]:
    tried: List[Tuple[str, str]] = []

    env = os.environ.get("RAMP_LIB", "")
    if env:
        cands = _files_in(env) if os.path.isdir(env) else [env]
        for c in cands:
            if not os.path.exists(c):
                tried.append(("RAMP_LIB=%s" % c, "no such file"))
                continue
            lib, why = _try(os.path.abspath(c))
            if lib is not None:
                return lib, "RAMP_LIB", "the RAMP_LIB environment variable names it", c, tried
            tried.append(("RAMP_LIB=%s" % c, why))
        raise LibraryNotFoundError(
            _message(tried, "RAMP_LIB is set, so no other place was tried."), tried
        )
    tried.append(("RAMP_LIB", "not set"))

    for c in _files_in(PACKAGE_LIB_DIR):
        if not os.path.exists(c):
            tried.append(("package copy %s" % c, "no such file"))
            continue
        lib, why = _try(c)
        if lib is not None:
            return lib, "package", "the package's own copy (ramp/_lib)", c, tried
        tried.append(("package copy %s" % c, why))

    lib, why = _try(SONAME)
    if lib is not None:
        return lib, "system", "the system's loader path (dlopen of %s)" % SONAME, SONAME, tried
    ldp = os.environ.get("LD_LIBRARY_PATH", "")
    tried.append(
        (
            "system loader: %s (LD_LIBRARY_PATH=%s)" % (SONAME, ldp or "<unset>"),
            why,
        )
    )
    found = ctypes.util.find_library("ramp")
    if found and found != SONAME:
        lib, why = _try(found)
        if lib is not None:
            return (
                lib,
                "system",
                "the system's loader path (find_library: %s)" % found,
                found,
                tried,
            )
        tried.append(("ctypes.util.find_library('ramp') -> %s" % found, why))
    else:
        tried.append(("ctypes.util.find_library('ramp')", "nothing found"))

    runners = []
    try:  # the launcher that started this process
        parent = os.path.realpath("/proc/%d/exe" % os.getppid())
        if os.path.basename(parent) == "ramp-run":
            runners.append((parent, "the ramp-run launcher that started this process"))
    except OSError:
        pass
    on_path = shutil.which("ramp-run")
    if on_path:
        runners.append((os.path.realpath(on_path), "the ramp-run launcher on PATH"))
    else:
        tried.append(("beside ramp-run on PATH", "ramp-run is not on PATH"))
    for runner, what in runners:
        bindir = os.path.dirname(runner)
        for d in (os.path.join(os.path.dirname(bindir), "lib"), bindir):
            for c in _files_in(d):
                if not os.path.exists(c):
                    tried.append(("beside %s: %s" % (runner, c), "no such file"))
                    continue
                lib, why = _try(c)
                if lib is not None:
                    return lib, "ramp-run", "beside %s (%s)" % (what, runner), c, tried
                tried.append(("beside %s: %s" % (runner, c), why))

    raise LibraryNotFoundError(_message(tried, ""), tried)


def _message(tried: List[Tuple[str, str]], note: str) -> str:
    lines = ["cannot load libramp.so (the ramp C library); tried, in order:"]
    lines += ["  - %s: %s" % t for t in tried]
    if note:
        lines.append(note)
    lines += [
        "Fix it with one of:",
        "  - build it (cargo build --release) and set RAMP_LIB=/path/to/ramp/target/release/libramp.so",
        "  - copy it into this package: python -m ramp.install_lib /path/to/libramp.so",
        "  - install it (bash scripts/install.sh PREFIX) and add PREFIX/lib to LD_LIBRARY_PATH",
    ]
    return "\n".join(lines)


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            continue  # reported when first used
        f.restype = restype
        f.argtypes = argtypes


def lib() -> ctypes.CDLL:
    """Returns the loaded libramp (loading it on first use)."""
    global _lib, _info
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            loaded, source, reason, _given, tried = _search()
            _declare(loaded)
            version = loaded.ramp_Version().decode("ascii", "replace")
            path = _loaded_path(loaded, _given)
            _info = LibraryInfo(path, source, reason, version, tuple(tried))
            if os.environ.get("RAMP_PY_VERBOSE", "") not in ("", "0"):
                sys.stderr.write("ramp: loaded %s (%s), version %s\n" % (path, reason, version))
            _lib = loaded
    return _lib


# the library each module's table of prototypes was last declared on (by the table's id:
# the tables are module constants, alive as long as the process)
_declared_on: Dict[int, ctypes.CDLL] = {}


def declared(prototypes: Dict[str, Tuple[Any, List[Any]]]) -> ctypes.CDLL:
    """The loaded libramp with ``prototypes`` ({name: (restype, argtypes)}, a module's own
    functions: _regions, txn, names) declared on it, once per library loaded."""
    loaded = lib()
    if _declared_on.get(id(prototypes)) is not loaded:
        for name, (restype, argtypes) in prototypes.items():
            f = getattr(loaded, name)
            f.restype = restype
            f.argtypes = argtypes
        _declared_on[id(prototypes)] = loaded
    return loaded


def info() -> LibraryInfo:
    """Which library was loaded (loads it if needed)."""
    lib()
    assert _info is not None
    return _info
