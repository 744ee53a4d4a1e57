"""``python -m ramp.install_lib [PATH]``: copies libramp.so into this package (ramp/_lib).

After it, the package finds the library without ``RAMP_LIB`` or ``LD_LIBRARY_PATH``.
PATH defaults to ``$RAMP_LIB``, else ``target/release/libramp.so`` of the ramp source
tree around the current directory, else the library beside ``ramp-run`` on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional

from ._lib import PACKAGE_LIB_DIR, SONAME

__all__ = ["default_sources", "install", "main"]


def default_sources() -> List[str]:
    """Where the library is looked for when no PATH is given, in order."""
    out = []
    env = os.environ.get("RAMP_LIB")
    if env:
        out.append(env)
    d = os.getcwd()
    while True:
        out.append(os.path.join(d, "target", "release", "libramp.so"))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    runner = shutil.which("ramp-run")
    if runner:
        b = os.path.dirname(os.path.realpath(runner))
        out += [os.path.join(os.path.dirname(b), "lib", SONAME), os.path.join(b, "libramp.so")]
    return out


def install(source: Optional[str] = None, dest_dir: str = PACKAGE_LIB_DIR) -> str:
    """Copies ``source`` (or the first existing default) to ``dest_dir/libramp.so.0``;
    returns the destination path.  Raises FileNotFoundError when nothing is found."""
    cands = [source] if source else default_sources()
    for c in cands:
        if os.path.isdir(c):
            c = os.path.join(c, "libramp.so")
        if os.path.isfile(c):
            os.makedirs(dest_dir, exist_ok=True)
            dest = os.path.join(dest_dir, SONAME)
            tmp = dest + ".tmp"
            shutil.copy2(os.path.realpath(c), tmp)
            os.replace(tmp, dest)
            return dest
    raise FileNotFoundError(
        "libramp.so not found; tried: %s (build it with `cargo build --release`)" % ", ".join(cands)
    )


def main(argv: Optional[List[str]] = None) -> int:
    """Command-line entry point."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    try:
        dest = install(args[0] if args else None)
    except (OSError, FileNotFoundError) as e:
        print("ramp.install_lib: %s" % e, file=sys.stderr)
        return 1
    print("ramp.install_lib: installed %s" % dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
