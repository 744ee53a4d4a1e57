"""ramp: Active Messages (AM-2) over reliable UDP, from Python.

A pure-Python (ctypes) binding of libramp.so: bundles, endpoints, handlers written
as plain Python functions, short/medium/long requests and replies, segments made
of bytearrays or numpy arrays, token interrogation, statistics, and SPMD jobs
(:mod:`ramp.spmd`).  Quick start (one process, two endpoints)::

    import ramp

    with ramp.Bundle() as b:
        a, c = b.allocate_endpoint(), b.allocate_endpoint()
        for ep, peer in ((a, c), (c, a)):
            ep.tag = 0x5EED
            ep.map(0, peer.name, 0x5EED)
        answers = []
        c.set_handler(1, lambda tok, n: tok.reply(2, n + 1))
        a.set_handler(2, lambda tok, n: answers.append(n))
        a.set_expected_resources(depth=16)
        c.set_expected_resources(depth=16)
        a.request(0, 1, 41)
        b.wait(lambda: answers)
        print(answers[0])            # 42

Which libramp.so is used: ``RAMP_LIB``, else the package's own copy, else the
system's loader path (see :func:`library_info`, ``python -m ramp``).
"""

from . import names, spmd
from ._lib import LibraryInfo
from .constants import *  # noqa: F401,F403
from .constants import __all__ as _constants_all
from .core import (
    Bundle,
    Endpoint,
    EndpointName,
    ErrorHandlerFunction,
    HandlerFunction,
    Token,
    TokenInfo,
    aggregate_statistics,
    error_name,
    format_statistics,
    init,
    initial_statistics,
    library_info,
    max_seg_length,
    set_verbose_errors,
    statistics_to_dict,
    status_name,
    terminate,
    version,
)
from .errors import (
    AMError,
    BadArgError,
    HandlerKindError,
    InUseError,
    LibraryNotFoundError,
    NotInitError,
    NotSentError,
    RampError,
    ResourceError,
    ReturnedMessageError,
    TokenExpiredError,
)

#: Version of this Python package (the library's is :func:`version`).
__version__ = "0.1.0"

__all__ = [
    "__version__",
    "names",
    "spmd",
    "LibraryInfo",
    "Bundle",
    "Endpoint",
    "EndpointName",
    "ErrorHandlerFunction",
    "HandlerFunction",
    "Token",
    "TokenInfo",
    "aggregate_statistics",
    "error_name",
    "format_statistics",
    "init",
    "initial_statistics",
    "library_info",
    "max_seg_length",
    "set_verbose_errors",
    "statistics_to_dict",
    "status_name",
    "terminate",
    "version",
    "AMError",
    "BadArgError",
    "HandlerKindError",
    "InUseError",
    "LibraryNotFoundError",
    "NotInitError",
    "NotSentError",
    "RampError",
    "ResourceError",
    "ReturnedMessageError",
    "TokenExpiredError",
] + list(_constants_all)
