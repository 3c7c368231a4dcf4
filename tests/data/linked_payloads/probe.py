"""A model's probe (tests/test_adversarial_code_reached_through_a_symlink.py reads it through a link)."""


def probe(a):
    return type(a) is not int
