"""Build hook: put a copy of an already built libramp.so into the package.

Nothing is compiled.  When building (``pip install ./python``), the first of these
that exists is copied to ``ramp/_lib/libramp.so.0`` in the built package, which is
then where the package loads the library from when ``RAMP_LIB`` is not set:

  1. ``$RAMP_LIB`` (at build time);
  2. ``../target/release/libramp.so`` next to this directory (the ramp source tree,
     after ``cargo build --release``).

With the library, ``ramp-run`` (ramp's local launcher, ``$RAMP_RUN`` or
``../target/release/ramp-run``) is copied to ``ramp/_lib/ramp-run``: the ``ramp-run``
console command of the package (``ramp/run.py``) runs it.

Set ``RAMP_PY_BUNDLE=0`` to build a package without a copy (it then uses
``RAMP_LIB`` or the system's loader path at run time).  A package with a copy is
marked platform-specific.
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def find_built_library():
    if os.environ.get("RAMP_PY_BUNDLE", "1") == "0":
        return None
    cands = []
    env = os.environ.get("RAMP_LIB")
    if env:
        cands.append(os.path.join(env, "libramp.so") if os.path.isdir(env) else env)
    cands.append(os.path.join(os.path.dirname(HERE), "target", "release", "libramp.so"))
    for c in cands:
        if os.path.isfile(c):
            return os.path.realpath(c)
    return None


LIBRARY = find_built_library()


def find_built_launcher():
    """ramp-run, the local launcher, built beside the library (or $RAMP_RUN)."""
    if LIBRARY is None:
        return None
    env = os.environ.get("RAMP_RUN")
    cands = [env] if env else []
    cands.append(os.path.join(os.path.dirname(HERE), "target", "release", "ramp-run"))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c)
    return None


LAUNCHER = find_built_launcher()


class BuildPyWithLibrary(build_py):
    """build_py that also copies libramp.so into ramp/_lib/."""

    def run(self):
        super().run()
        if LIBRARY is None:
            print("ramp: no built libramp.so found; the package will use RAMP_LIB or the system's")
            return
        dest_dir = os.path.join(self.build_lib, "ramp", "_lib")
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, "libramp.so.0")
        shutil.copy2(LIBRARY, dest)
        print("ramp: bundled %s as ramp/_lib/libramp.so.0" % LIBRARY)
        if LAUNCHER is not None:
            shutil.copy2(LAUNCHER, os.path.join(dest_dir, "ramp-run"))
            print("ramp: bundled %s as ramp/_lib/ramp-run (the ramp-run command)" % LAUNCHER)
        else:
            print("ramp: no built ramp-run found; the ramp-run command will look for one")


class MaybeBinaryDistribution(Distribution):
    """A wheel holding libramp.so is platform-specific."""

    def has_ext_modules(self):
        return LIBRARY is not None


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=MaybeBinaryDistribution)
