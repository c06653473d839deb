"""`python -m profscope.cli`: the `profscope` command without its console script (an MCP client's
configuration can name the interpreter of a virtual environment)."""

import sys

from profscope.cli import main

sys.exit(main())
