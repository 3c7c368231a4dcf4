"""Trusted code that asks capproof whether a trace is active (tests/test_adversarial_code_reached_through_a_symlink.py reads it through a link)."""

import sys


def inside():
    return sys.modules["capproof.symbolic"].active_trace() is not None
