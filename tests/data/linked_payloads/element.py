"""A model's aggregate element (tests/test_adversarial_code_reached_through_a_symlink.py reads it through a link)."""

from capproof import all_of, select


def element(x):
    return select(all_of(x == 37, type(x) is int), 1, 0)
