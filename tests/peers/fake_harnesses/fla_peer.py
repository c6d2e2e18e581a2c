"""Fake fla harness: tests/peers/fake_harnesses/fake_harness.py says what it does."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_harness import main  # noqa: E402

sys.exit(main("fla"))
