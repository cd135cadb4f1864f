"""`python -m docdex.cli`: the `docdex` command (the worker and the tests start it so)."""

import sys

from docdex.cli import main

sys.exit(main())
