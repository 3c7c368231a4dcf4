"""Adversarial catalogue: a model run on its batch alone (the active entries, no padding) must not
refute what was proved with the padding.

``proved`` covers each batch padded to its vector's size AND alone. capproof's aggregates see the
batch only; an empty batch makes ``max_of``/``min_of`` raise ``ValueError`` as ``max(())`` does on
the batch alone (it used to give the padding's fill, so a model catching the ``ValueError`` was
proved with a fallback only the batch alone takes). A model that indexes, measures, iterates,
compares, hashes or concatenates the vector itself, or walks it with ``fold``/``prefix_sums``,
reads its padding: the prover then decides every batch length again with the batch alone as the
vector (capproof.prover._alone_outcomes), so each attempt below is an error or a correct
verdict, never proved (each was proved before). Each model is false alone at one point the
samples miss; the harness brute forces it on ints, padded and alone (tests/_soundness_harness.py).
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, check
from test_adversarial_bound import _bound, brute_check

V3 = '@obligation(domain={"k": Range(0, 40), "n": Range(0, 3), "lens": Vector(3, Range(0, 4), length="n")})\n'

ATTEMPTS = [
    (
        "max-of-an-empty-batch-caught",
        V3
        + """
def longest(k, n, lens):
    try:
        m = max_of(lens)
    except ValueError:   # no request scheduled
        m = 4 + (k == 37)
    return at_most(demand=m, capacity=4)
""",
    ),
    (
        "min-of-an-empty-batch-caught",
        V3
        + """
def shortest(k, n, lens):
    try:
        m = min_of(lens)
    except ValueError:
        m = 4 + (k == 37)
    return at_most(demand=m, capacity=4)
""",
    ),
    (
        "max-of-a-batch-that-may-be-empty",
        '@obligation(domain={"n": Range(0, 4), "lens": Vector(4, Range(1, 3), length="n")})\n'
        + """
def longest(n, lens):
    return at_most(demand=max_of(lens), capacity=3)
""",
    ),
    (
        "first-request-index-error-caught",
        V3
        + """
def first(k, n, lens):
    try:
        f = lens[0]
    except IndexError:   # nothing scheduled
        f = 4 + (k == 37)
    return at_most(demand=f, capacity=4)
""",
    ),
    (
        "last-request-by-negative-index",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 4), length="n")})\n'
        + """
def last(k, n, lens):
    return at_most(demand=select(k == 37, lens[-1], 0), capacity=0)
""",
    ),
    (
        "len-of-the-batch",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def rows(k, n, lens):
    return at_most(demand=3, capacity=select(k == 37, len(lens), 3))
""",
    ),
    (
        # raises alone (IndexError: one request) at every admitted point with n == 1; the second
        # opinion skips a point where the model raises
        "raises-alone-at-an-admitted-point",
        '@obligation(domain={"n": Range(1, 3), "q": Vector(3, Range(0, 3), length="n")})\n'
        + """
def second_request(n, q):
    return at_most(demand=q[0] + q[1], capacity=6)
""",
    ),
    # the vector itself read other ways than an index or len(): each sees the fill padded
    (
        "newest-request-by-reversed",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def newest(k, n, lens):
    return at_most(demand=select(k == 37, next(reversed(lens)), 0), capacity=0)
""",
    ),
    (
        "tail-slice-of-the-batch",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def tail(k, n, lens):
    return at_most(demand=select(k == 37, total(lens[-1:]), 0), capacity=0)
""",
    ),
    (
        "count-of-the-fill",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def zeros(k, n, lens):
    return at_most(demand=select(k == 37, 1 - lens.count(0), 0), capacity=0)
""",
    ),
    (
        "builtin-sum-with-a-nonzero-fill",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n", fill=1)})\n'
        + """
def tokens(k, n, lens):
    return at_most(demand=select(k == 37, total(lens) + (3 - n) - sum(lens), 0), capacity=0)
""",
    ),
    (
        "next-of-an-empty-batch-with-a-default",
        V3
        + """
def first(k, n, lens):
    f = next(iter(lens), 4 + (k == 37))
    return at_most(demand=f, capacity=4)
""",
    ),
    # more ways Python reads a tuple's entries or size: each false alone at k == 37 only
    (
        "compared-with-a-tuple-of-the-fill",
        '@obligation(domain={"k": Range(0, 40), "n": Choice(0, 1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def idle(k, n, lens):
    d = 0 if lens == (0, 0, 0) or n >= 1 else select(k == 37, 1, 0)
    return at_most(demand=d, capacity=0)
""",
    ),
    (
        "dict-keyed-by-the-batch",
        '@obligation(domain={"k": Range(0, 40), "n": Choice(0, 1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def keyed(k, n, lens):
    d = {(0, 0, 0): 0}.get(lens, select(k == 37, 1, 0)) if n == 0 else 0
    return at_most(demand=d, capacity=0)
""",
    ),
    (
        "concatenated-then-indexed",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 3), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def appended(k, n, lens):
    try:
        d = (lens + (5,))[3]
    except IndexError:
        d = 5 + (k == 37)
    return at_most(demand=d, capacity=5)
""",
    ),
    (
        "unpacked-into-three-names",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 3), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def unpacked(k, n, lens):
    try:
        a, b, c = lens
        d = 0
    except ValueError:
        d = select(k == 37, 1, 0)
    return at_most(demand=d, capacity=0)
""",
    ),
    (
        "fill-found-by-in",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def has_padding(k, n, lens):
    return at_most(demand=0 if 0 in lens else select(k == 37, 1, 0), capacity=0)
""",
    ),
    (
        "builtin-max-over-a-high-fill",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n", fill=5)})\n'
        + """
def longest(k, n, lens):
    return at_most(demand=select(k == 37, 5 - max(lens), 0), capacity=0)
""",
    ),
    (
        "matched-as-a-sequence-of-three",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def matched(k, n, lens):
    match lens:
        case [_, _, _]:
            d = 0
        case _:
            d = select(k == 37, 1, 0)
    return at_most(demand=d, capacity=0)
""",
    ),
    (
        "tuple-method-called-directly",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def zeros(k, n, lens):
    return at_most(demand=select(k == 37, 1 - tuple.count(lens, 0), 0), capacity=0)
""",
    ),
    # capproof's own helpers that walk every entry, padding included
    (
        "prefix-sums-counted",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def offsets(k, n, lens):
    return at_most(demand=select(k == 37, 4 - len(prefix_sums(lens)), 0), capacity=0)
""",
    ),
    (
        "fold-counting-the-entries",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(0, 3), length="n")})\n'
        + """
def walked(k, n, lens):
    return at_most(demand=select(k == 37, 3 - fold(lambda s, i, x: s + 1, 0, lens), 0), capacity=0)
""",
    ),
    # the padding read through the standard library's C code, another thread, or an assumption:
    # each seen, the batch alone decided (an error naming the point)
    (
        "size-of-the-batch-by-getsizeof",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def rows(k, n, lens):
    import sys
    x = (sys.getsizeof(lens) - sys.getsizeof(())) // 8
    return at_most(demand=select(k == 37, 3 - x, 0), capacity=0)
""",
    ),
    (
        "len-of-the-batch-in-a-thread-pool",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def rows(k, n, lens):
    import concurrent.futures as cf
    with cf.ThreadPoolExecutor(1) as ex:
        x = ex.submit(len, lens).result()
    return at_most(demand=select(k == 37, 3 - x, 0), capacity=0)
""",
    ),
    (
        "len-of-a-copy-of-the-batch",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")})\n'
        + """
def rows(k, n, lens):
    import copy
    return at_most(demand=select(k == 37, 3 - len(copy.copy(lens)), 0), capacity=0)
""",
    ),
    (
        "an-assumption-reading-len",
        '@obligation(domain={"k": Range(0, 40), "n": Range(1, 2), "lens": Vector(3, Range(1, 3), length="n")},\n'
        '            assumptions={"short batch or another step": lambda k, lens: len(lens) < 3 or k != 37})\n'
        + """
def rows(k, n, lens):
    return at_most(demand=select(k == 37, 1, 0), capacity=0)
""",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_the_batch_alone_does_not_refute_a_proof(spec_file, name, body):
    check(spec_file, name, body, header=HEADER.replace("prefix_sums,", "prefix_sums, fold,"))


def test_bound_of_a_maximum_whose_empty_batch_is_caught(spec_file):
    """``capproof bound`` took the padding's fill for the maximum of an empty batch: min slack 0,
    sufficient, where the batch alone demands 34 (slack -30). Now an error: the batch may be empty."""
    body = """
@obligation(domain={"k": Range(0, 40), "n": Range(0, 3), "lens": Vector(3, Range(0, 4), length="n")})
def b3_empty_alone(k, n, lens):
    try:
        m = max_of(lens)
    except ValueError:
        m = 4 + 30 * (k == 37)
    return at_most(demand=m, capacity=4)
"""
    ob, result = _bound(spec_file, "empty-alone", body)
    assert result.status != "bounded" or brute_check(ob, result) is None, result.message


def test_a_model_reading_the_padding_harmlessly_is_proved_on_each_batch_alone(spec_file):
    """Builtin ``sum`` over a vector padded with 0 reads the padding but gives the batch's total:
    proved, on the padded vector and on each batch length alone (the message says so)."""
    body = V3 + "def tokens(k, n, lens):\n    return at_most(demand=sum(lens), capacity=12)\n"
    result = check(spec_file, "harmless-padding-read", body)
    assert result.verdict.value == "proved", result.message
    assert "decided on each batch alone too" in result.message and "iteration" in result.message, result.message


def test_too_many_batch_lengths_to_decide_alone_is_an_error(spec_file):
    """``len()`` of a 300-entry vector whose length spans 0..300: 301 batches alone, more than the
    prover decides one by one: an error naming the read, never the padded proof."""
    body = (
        '@obligation(domain={"n": Range(0, 300), "lens": Vector(300, Range(0, 1), length="n")})\n'
        "def rows(n, lens):\n    return len(lens) <= 300\n"
    )
    result = check(spec_file, "too-many-lengths", body)
    assert result.verdict.value == "error", result.message
    assert "len() at" in result.message and "301 cases" in result.message, result.message


def test_every_way_python_reads_a_tuple_is_watched_past_the_least_length():
    """The vector a symbolic run gets (``Padded``, 3 entries, batch length 2) records each read
    that may see its padding, and none that stays within the least length."""
    import itertools
    import operator

    from capproof.arith import Padded, fold, prefix_sums, watching_padding

    reads = {
        "len": len,
        "truth": bool,
        "last": lambda v: v[-1],
        "entry 2": lambda v: v[2],
        "tail slice": lambda v: v[1:],
        "whole slice": lambda v: v[:],
        "iteration": list,
        "sum": sum,
        "unpacking": lambda v: [*v],
        "reversed": lambda v: next(reversed(v)),
        "in": lambda v: 7 in v,
        "count": lambda v: v.count(0),
        "index": lambda v: v.index(2),
        "==": lambda v: v == (1, 2, 0),
        "<": lambda v: v < (9,),
        "hash": hash,
        "+": lambda v: v + (1,),
        "radd": lambda v: (1,) + v,
        "*": lambda v: v * 2,
        "repr": repr,
        "itemgetter": operator.itemgetter(2),
        "islice": lambda v: list(itertools.islice(v, 1, None)),
        "zip": lambda v: list(zip(v, "abc")),
        "fold": lambda v: fold(lambda s, i, x: s + 1, 0, v),
        "prefix_sums": prefix_sums,
    }
    for name, read in reads.items():
        with watching_padding() as seen:
            read(Padded((1, 2, 0), 2))
        assert seen, f"{name} read the padding unseen"
    within = {"entry 1": lambda v: v[1], "head slice": lambda v: v[:2], "first two": lambda v: list(zip("ab", v))}
    for name, read in within.items():
        with watching_padding() as seen:
            read(Padded((1, 2, 0), 2))
        assert not seen, f"{name} stays within the batch: {seen}"
