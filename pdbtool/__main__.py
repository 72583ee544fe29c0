"""``python -m pdbtool``: the pdbtool command."""

import sys

from pdbtool.cli.main import main

sys.exit(main())
