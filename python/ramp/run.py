"""``ramp-run`` for Python users: the console command ``pip install`` puts on PATH, and
``python -m ramp.run``.  Both start ramp's local launcher, the ``ramp-run`` program
built with libramp (``ramp-run -n 4 python3 prog.py``), found in this order:

  1. ``$RAMP_RUN`` (a path to the program);
  2. the copy in this package (``ramp/_lib/ramp-run``, bundled by ``pip install`` from a
     source tree after ``cargo build --release``);
  3. ``ramp-run`` beside the libramp.so this package loads (e.g. ``target/release``);
  4. a ``ramp-run`` program (not this Python command) on ``PATH``.

When none is found it says so, and how to get one, and exits with 127.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional, Tuple

from ._lib import PACKAGE_LIB_DIR

__all__ = ["find_launcher", "main"]


def _is_program(path: str) -> bool:
    """An executable ELF file: a built ramp-run, not a script (such as this command)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return False
    return magic == b"\x7fELF" and os.access(path, os.X_OK)


def find_launcher() -> Tuple[Optional[str], List[Tuple[str, str]]]:
    """The ramp-run program to run, or None; and every place tried with its outcome."""
    tried: List[Tuple[str, str]] = []

    def consider(place: str, path: Optional[str]) -> Optional[str]:
        if not path:
            tried.append((place, "not set"))
            return None
        if _is_program(path):
            return path
        tried.append((place, "%s: %s" % (path, "not an executable program" if os.path.exists(path) else "absent")))
        return None

    env = os.environ.get("RAMP_RUN")
    found = consider("$RAMP_RUN", env)
    if found:
        return found, tried
    found = consider("the package's copy", os.path.join(PACKAGE_LIB_DIR, "ramp-run"))
    if found:
        return found, tried
    try:
        from ._lib import info

        libdir = os.path.dirname(info().path)
        found = consider("beside the loaded libramp.so", os.path.join(libdir, "ramp-run"))
    except Exception as e:  # no library either: say so and go on
        tried.append(("beside the loaded libramp.so", "no libramp.so loaded (%s)" % str(e).splitlines()[0]))
    if found:
        return found, tried
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d or ".", "ramp-run")
        if _is_program(p):
            return p, tried
    tried.append(("PATH", "no ramp-run program on it"))
    return None, tried


def main(argv: Optional[List[str]] = None) -> int:
    """Replaces this process with ramp-run and the given arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    prog, tried = find_launcher()
    if prog is None:
        lines = ["ramp-run: ramp's launcher program was not found; tried:"]
        lines += ["  - %s: %s" % t for t in tried]
        lines.append(
            "Build it with `cargo build --release` in the ramp source tree (it is "
            "target/release/ramp-run) and set RAMP_RUN to it, or reinstall this package "
            "from that tree (`pip install ./python`), which bundles it."
        )
        print("\n".join(lines), file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(prog, [prog] + args)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
