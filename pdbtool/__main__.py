"""``python -m pdbtool``: the pdbtool command."""

import sys

from .cli import main

sys.exit(main())
