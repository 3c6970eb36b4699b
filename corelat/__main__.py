"""``python -m corelat``: the same as the ``corelat`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
