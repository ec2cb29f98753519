"""`python -m sweep` is the `sweep` console script."""

import sys

from sweep.cli import main

sys.exit(main())
