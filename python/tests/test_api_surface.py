"""Every public name: documented, type-hinted, and used by the tests."""

from __future__ import annotations

import enum
import glob
import inspect
import os
import re

import pytest

import ramp
import ramp.install_lib
from conftest import TESTS

MODULES = {
    "ramp": ramp,
    "ramp.spmd": ramp.spmd,
    "ramp.install_lib": ramp.install_lib,
    "ramp.names": ramp.names,
}


def public_names():
    out = []
    for modname, mod in MODULES.items():
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for n in names:
            obj = getattr(mod, n)
            if inspect.ismodule(obj) and n != "spmd":
                continue
            out.append((modname, n, obj))
            if (
                inspect.isclass(obj)
                and not issubclass(obj, (enum.Enum, BaseException))
                and obj.__module__.startswith("ramp")
            ):
                for m, v in vars(obj).items():
                    if not m.startswith("_") and (
                        inspect.isfunction(v) or isinstance(v, (property, classmethod))
                    ):
                        out.append((modname, "%s.%s" % (n, m), v))
    return out


def _test_sources() -> str:
    text = ""
    for p in glob.glob(os.path.join(TESTS, "**", "*.py"), recursive=True):
        if os.path.basename(p) != "test_api_surface.py":
            with open(p) as f:
                text += f.read()
    return text


SOURCES = _test_sources()
CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]+$")


@pytest.mark.nolib
@pytest.mark.parametrize(
    "modname,name,obj", public_names(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_public_name(modname, name, obj):
    leaf = name.split(".")[-1]
    # used by some test
    assert re.search(r"\b%s\b" % re.escape(leaf), SOURCES), "%s.%s is not exercised by any test" % (
        modname,
        name,
    )
    if CONSTANT.match(leaf) or name == "__version__":
        return  # constants: values checked against the headers in test_objects.py
    target = (
        obj.fget
        if isinstance(obj, property)
        else obj.__func__
        if isinstance(obj, classmethod)
        else obj
    )
    if name in ("HandlerFunction", "ErrorHandlerFunction", "BufferLike"):
        return  # typing aliases (documented in the module)
    assert inspect.getdoc(target), "%s.%s has no docstring" % (modname, name)
    if inspect.isfunction(target):
        sig = inspect.signature(target)
        for p in sig.parameters.values():
            if p.name in ("self", "cls"):
                continue
            assert p.annotation is not inspect.Parameter.empty, (
                "%s.%s: parameter %s has no type hint" % (modname, name, p.name)
            )
        assert sig.return_annotation is not inspect.Signature.empty, (
            "%s.%s has no return type hint" % (modname, name)
        )


@pytest.mark.nolib
def test_all_is_complete():
    for mod in (ramp, ramp.spmd):
        for n in mod.__all__:
            assert hasattr(mod, n), n
    assert "Bundle" in ramp.__all__ and "startup" in ramp.spmd.__all__
    assert ramp.__doc__ and ramp.spmd.__doc__ and ramp.core.__doc__
