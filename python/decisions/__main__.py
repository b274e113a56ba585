"""``python -m decisions``: the CLI; with no arguments, ``decisions inspect``
over the bundled example recordings."""

import sys

from .cli import main

sys.exit(main())
