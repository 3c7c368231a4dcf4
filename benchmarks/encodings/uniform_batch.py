"""Robust encodings: a uniform batch written ``min_of(v) == max_of(v)`` with a claim
that indexes the batch (so the aggregate abstraction does not apply: the bounded encoding
decides it). ``num_reqs`` a ``Range(1, 256)`` length, or a full 256-entry batch (``_full``).
Run by benchmarks/encodings.py; see docs/performance.md."""

from capproof import Choice, Range, Vector, at_most, obligation
from capproof.arith import max_of, min_of, total

D = {
    "mnbt": Range(1, 2**16),
    "k": Choice(1, 3),
    "num_reqs": Range(1, 256),
    "decode_lens": Vector(256, Range(1, 8), length="num_reqs"),
}
FULL = {"mnbt": Range(1, 2**16), "k": Choice(1, 3), "decode_lens": Vector(256, Range(1, 8))}


def _facts(uniform):
    return {
        "uniform": uniform,
        "budget": lambda decode_lens, mnbt: total(decode_lens) <= mnbt,
        "decode": lambda decode_lens, k: max_of(decode_lens) <= 1 + k,
    }


UNIFORM = _facts(lambda decode_lens: min_of(decode_lens) == max_of(decode_lens))


@obligation(domain=D, assumptions=UNIFORM, expect="counterexample")
def rows_fit_min_eq_max(mnbt, k, num_reqs, decode_lens):
    return at_most(rows=num_reqs * decode_lens[0], capacity=mnbt - 1)


@obligation(domain=D, assumptions=UNIFORM, expect="proved")
def rows_fit_min_eq_max_proved(mnbt, k, num_reqs, decode_lens):
    return at_most(longest=max_of(decode_lens), first=decode_lens[0])


@obligation(domain=FULL, assumptions=UNIFORM, expect="counterexample")
def rows_fit_min_eq_max_full(mnbt, k, decode_lens):
    return at_most(rows=256 * decode_lens[7], capacity=mnbt - 1)


@obligation(domain=FULL, assumptions=UNIFORM, expect="proved")
def rows_fit_min_eq_max_full_proved(mnbt, k, decode_lens):
    return at_most(rows=256 * decode_lens[7], capacity=mnbt)


# (3) the same length declared as a Choice of every value 1..256 (each value its own case)
DC = {**D, "num_reqs": Choice(range(1, 257))}


@obligation(domain=DC, assumptions=UNIFORM, expect="counterexample")
def rows_fit_min_eq_max_choice(mnbt, k, num_reqs, decode_lens):
    return at_most(rows=num_reqs * decode_lens[0], capacity=mnbt - 1)


@obligation(domain=DC, assumptions=UNIFORM, expect="proved")
def rows_fit_min_eq_max_choice_proved(mnbt, k, num_reqs, decode_lens):
    return at_most(longest=max_of(decode_lens), first=decode_lens[0])
