"""``python -m bot.cli``: the same command line as ``countersign``."""

import sys

from bot.cli import main

sys.exit(main())
