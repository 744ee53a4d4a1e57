"""``python -m ramp``: says which libramp.so this package loads, from where and why."""

from __future__ import annotations

import sys

from . import __version__
from ._lib import PACKAGE_LIB_DIR, info
from .errors import LibraryNotFoundError


def main() -> int:
    """Prints the library found (exit 0) or every place tried (exit 1)."""
    try:
        i = info()
    except LibraryNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    print("ramp Python package %s" % __version__)
    print("libramp %s loaded from %s" % (i.version, i.path))
    print("found through: %s" % i.reason)
    if i.tried:
        print("tried before:")
        for place, outcome in i.tried:
            print("  - %s: %s" % (place, outcome))
    print("package copy directory: %s" % PACKAGE_LIB_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
