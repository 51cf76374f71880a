"""``python -m facility`` runs the command line (:mod:`facility.cli`)."""

import sys

from facility.cli import main

sys.exit(main())
