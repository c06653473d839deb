"""Capture: the ddp4_slow_rank job with no slow rank (every rank sleeps 0.002 s in load_batch).

Usage: python ddp4_clean.py OUT_DIR
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp4_slow_rank  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ddp4_slow_rank.main(sys.argv[1], slow_rank=None)
