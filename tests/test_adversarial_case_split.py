"""Adversarial catalogue: a symbolic value a model needs as a Python int, and a zero divisor a
model catches, get a verdict, not an error, where the cases are few.

Engine code looks sizes up in tables (``CAPTURE_PAD[bs]``, ``(4, 8, 16)[k]``, a dict keyed by a
flag), converts with ``int()`` and guards divisions with ``try/except ZeroDivisionError``. Each
was an ``error`` (no verdict) on a symbolic parameter: a key or an index needs a Python int. Now
the symbolic run splits the value into one path per value the path admits (at most
``CASE_SPLIT_LIMIT``), and a zero divisor inside a ``try`` is a path that raises
``ZeroDivisionError`` as Python does. Every verdict is checked against brute force on ints
(``_soundness_harness.check``); a wide range stays an error, never a verdict.
"""

from __future__ import annotations

import pytest
from _soundness_harness import check


def _verdict(spec_file, name, body):
    return check(spec_file, name, body)


@pytest.mark.parametrize(
    "name, body, verdict",
    [
        (
            "dict-keyed-by-a-range",
            """
PAD = {0: 4, 1: 8, 2: 16}

@obligation(domain={"k": Range(0, 2), "n": Range(1, 100)})
def padded(k, n):
    return at_most(demand=PAD[k] + n, capacity=116)
""",
            "proved",
        ),
        (
            "dict-with-one-bad-entry",
            """
PAD = {0: 4, 1: 8, 2: 17}

@obligation(domain={"k": Range(0, 2), "n": Range(1, 100)})
def padded(k, n):
    return at_most(demand=PAD[k] + n, capacity=116)
""",
            "counterexample",
        ),
        (
            "tuple-indexed-by-a-range",
            """
@obligation(domain={"k": Range(0, 3), "n": Range(1, 100)})
def sizes(k, n):
    return at_most(demand=(4, 8, 16, 32)[k] * n, capacity=3200)
""",
            "proved",
        ),
        (
            "dict-get-with-a-missing-key",
            """
PAD = {1: 1, 2: 2, 4: 4, 8: 8}

@obligation(domain={"bs": Range(1, 8)})
def graph(bs):
    return at_most(demand=bs, capacity=PAD.get(bs, 0))
""",
            "counterexample",
        ),
        (
            "dict-keyed-by-a-flag",
            """
TILE = {False: 16, True: 64}

@obligation(domain={"n": Range(1, 200)})
def tiles(n):
    return at_most(demand=cdiv(n, TILE[n > 64]) * TILE[n > 64], capacity=256)
""",
            "proved",
        ),
        (
            "set-membership",
            """
@obligation(domain={"bs": Range(1, 16)})
def captured(bs):
    padded = bs if bs in {1, 2, 4, 8, 16} else 16
    return at_most(demand=bs, capacity=padded)
""",
            "proved",
        ),
        (
            "int-of-a-flag",
            """
@obligation(domain={"n": Range(0, 100)})
def extra(n):
    return at_most(demand=n + int(n % 16 != 0), capacity=100)
""",
            "counterexample",
        ),
        (
            "int-of-a-ceil-over-few-values",
            """
@obligation(domain={"n": Range(0, 9), "b": Range(1, 3)})
def blocks(n, b):
    return at_most(demand=int(math.ceil(n / b)), capacity=9)
""",
            "proved",
        ),
        (
            "range-of-a-small-length",
            """
@obligation(domain={"n": Range(1, 4), "xs": Vector(4, Range(0, 5), length="n")})
def total_loop(n, xs):
    return at_most(demand=sum(xs[i] for i in range(n)), capacity=20)
""",
            "proved",
        ),
        (
            "zero-division-caught",
            """
@obligation(domain={"tokens": Range(0, 100), "dp": Range(0, 4)})
def per_rank(tokens, dp):
    try:
        share = tokens // dp
    except ZeroDivisionError:
        share = tokens
    return at_most(demand=share, capacity=100)
""",
            "proved",
        ),
        (
            "zero-division-caught-wrong-fallback",
            """
@obligation(domain={"tokens": Range(0, 100), "dp": Range(0, 4)})
def per_rank(tokens, dp):
    try:
        share = tokens // dp
    except ZeroDivisionError:
        share = tokens + 1
    return at_most(demand=share, capacity=100)
""",
            "counterexample",
        ),
        (
            "zero-division-caught-as-arithmetic-error-in-a-helper",
            """
def split(tokens, dp):
    return tokens % dp

@obligation(domain={"tokens": Range(0, 100), "dp": Range(0, 4)})
def remainder(tokens, dp):
    try:
        rest = split(tokens, dp)
    except ArithmeticError:
        rest = -1
    return less_than(index=rest, capacity=4)
""",
            "counterexample",
        ),
        (
            "true-division-caught",
            """
@obligation(domain={"n": Range(0, 64), "b": Range(0, 8)})
def blocks(n, b):
    try:
        need = math.ceil(n / b)
    except ZeroDivisionError:
        need = 0
    return at_most(demand=need, capacity=64)
""",
            "proved",
        ),
        # ``a / b`` underflows to 0.0 for a huge ``b``: its ceiling is 0 on ints
        (
            "ceil-of-a-quotient-that-underflows",
            """
@obligation(domain={"a": Range(1, 100), "b": Range(1, 2**1100)})
def blocks(a, b):
    return implies(b < 2**1080, math.ceil(a / b) >= 1)
""",
            "error",
        ),
        (
            "floor-of-a-negative-quotient-that-underflows",
            """
@obligation(domain={"a": Range(-100, -1), "b": Range(1, 2**1100)})
def blocks(a, b):
    return implies(b < 2**1080, math.floor(a / b) <= -1)
""",
            "error",
        ),
        # the ZeroDivisionError of a caught zero-divisor path is Python's own, message included
        # (``%`` and ``/`` say other things than ``//``)
        (
            "modulo-by-zero-message-read",
            """
@obligation(domain={"tokens": Range(0, 100), "k": Range(0, 100)})
def share(tokens, k):
    try:
        s = tokens % (k - 37)
    except ZeroDivisionError as e:
        s = 100 + select(tokens == 50, 1, 0) * ("division" not in str(e))
    return at_most(demand=s, capacity=100)
""",
            "counterexample",
        ),
        (
            "true-division-by-zero-message-read",
            """
@obligation(domain={"tokens": Range(0, 100), "k": Range(0, 100)})
def share(tokens, k):
    try:
        s = math.ceil(tokens / (k - 37))
    except ZeroDivisionError as e:
        s = 100 + select(tokens == 50, 1, 0) * (str(e) == "division by zero")
    return at_most(demand=s, capacity=100)
""",
            "counterexample",
        ),
        (
            "zero-division-traceback-depth-read",
            """
import traceback
@obligation(domain={"tokens": Range(0, 100), "k": Range(0, 100)})
def share(tokens, k):
    try:
        s = tokens // (k - 37)
    except ZeroDivisionError as e:
        depth = len(traceback.extract_tb(e.__traceback__))
        s = 100 + select(tokens == 50, 1, 0) * (depth == 1)
    return at_most(demand=s, capacity=100)
""",
            "error",
        ),
    ],
)
def test_a_verdict_where_the_cases_are_few(spec_file, name, body, verdict):
    result = _verdict(spec_file, name, body)
    assert result.verdict.value == verdict, result.message


@pytest.mark.parametrize(
    "name, body",
    [
        (
            "dict-keyed-by-a-wide-range",
            """
@obligation(domain={"n": Range(0, 10000)})
def wide(n):
    return at_most(demand={0: 1}.get(n, n), capacity=10000)
""",
        ),
        (
            "int-of-a-wide-ceil",
            """
@obligation(domain={"n": Range(0, 2**21), "b": Range(1, 64)})
def blocks(n, b):
    return at_most(demand=int(math.ceil(n / b)), capacity=2**21)
""",
        ),
        (
            "zero-division-not-caught",
            """
@obligation(domain={"tokens": Range(0, 100), "dp": Range(0, 4)})
def per_rank(tokens, dp):
    return at_most(demand=tokens // dp, capacity=100)
""",
        ),
    ],
)
def test_never_a_verdict_where_the_cases_are_many_or_the_error_is_not_caught(spec_file, name, body):
    result = _verdict(spec_file, name, body)
    assert result.verdict.value == "error", result.message


MOE_ROWS = """
T, K, E = {tokens}, 4, 8

def distinct(ids):
    return all_of(*(ids[t * K + i] != ids[t * K + j] for t in range(T) for i in range(K) for j in range(i + 1, K)))

@obligation(
    domain={{"ids": Vector(T * K, Range(0, E - 1)), "e": Range(0, E - 1)}},
    assumptions={{"distinct experts per token": distinct}},
    rlimit={rlimit},
)
def rows_per_expert(ids, e):
    return at_most(rows=count(x == e for x in ids), tokens=T)
"""


def _moe_rows(spec_file, tokens: int, rlimit: int):
    from capproof import Options
    from capproof.loader import load_file
    from capproof.prover import prove_obligation

    header = "from capproof import Range, Vector, obligation, at_most, all_of, count\n"
    (ob,) = load_file(spec_file(header + MOE_ROWS.format(tokens=tokens, rlimit=rlimit), f"moe_rows_{tokens}.py"))
    return prove_obligation(ob, Options(density="off"))


@pytest.mark.slow  # 2-3 s of solving; the case split over few values stays fast (test_a_verdict_where_the_cases_are_few)
def test_per_expert_rows_with_distinct_experts_are_split_by_expert(spec_file):
    """Every expert gets at most one row per token when each token's top-4 experts are pairwise
    distinct: unknown with the expert ``e`` as one symbolic range (Z3 must relate ``x == e`` to
    the count form of each token's group), proved with ``e`` split into its 8 values."""
    r = _moe_rows(spec_file, 16, 3_000_000)
    assert r.verdict.value == "proved", r.message
    assert "split into its 8 values" in r.message, r.message


@pytest.mark.slow
def test_per_expert_rows_at_64_tokens_top_4(spec_file):
    r = _moe_rows(spec_file, 64, 20_000_000)
    assert r.verdict.value == "proved", r.message


#: A zero-divisor path raises ZeroDivisionError as Python does, traceback included: a model may read
#: it. Through ``select`` (one term, no fork) the path's solver point (``tokens == 0``) agrees, so
#: only the traceback's length at ``tokens == 50`` tells the runs apart (capproof's frames were in it).
TRACEBACK_OF_A_ZERO_DIVISION = """
import traceback

@obligation(domain={"tokens": Range(0, 100), "k": Range(0, 100)})
def share(tokens, k):
    try:
        s = tokens // (k - 37)
    except ZeroDivisionError as e:   # Python: one entry, the model's frame
        depth = len(traceback.extract_tb(e.__traceback__))
        s = 100 + select(tokens == 50, 1, 0) * (depth == 1)
    return at_most(demand=s, capacity=100)
"""


def test_a_zero_divisor_path_raises_with_python_s_traceback(spec_file):
    _verdict(spec_file, "traceback-of-the-zero-division", TRACEBACK_OF_A_ZERO_DIVISION)
