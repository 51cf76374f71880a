"""``python -m facility.sweep``: the sweep command on its own."""

import sys

from facility.sweep.cli import main

if __name__ == "__main__":
    sys.exit(main())
