"""Slow tier: semantic fuzzing of the Z3 encoding against Python, at scale.

Random expression trees over the model vocabulary (``+ - * // %`` with negative operands,
``abs``, nested ``cdiv``/``round_up``, ``minimum``/``maximum``, ``select`` on random conditions;
the generators of tests/test_semantics.py) and over the engine-code vocabulary of the inventory
and forks work (``divmod``, ``>>``/``<<`` by constant and symbolic counts, ``&``/``|``/``^`` with
constant masks and arbitrary constants, ``~``, ``bit_length()``, ``math.ceil``/``floor``/``trunc``
of ``a / b`` (capproof's ``Quotient``), ``next_power_of_2``/``prev_power_of_2``, builtin
``min``/``max`` (forking, under ``explore``), ``abs``, and the machine-integer wraps
``int32``/``uint32``/``int64``) are evaluated once on ``SymInt`` variables and compared with Python
at several points each (a point where a recorded side condition of an exact encoding, e.g.
``|a| < 2**53`` for a float quotient, fails is counted apart: the prover reports such a point as
an error, never a verdict); batch aggregates over :class:`~capproof.arith.Padded` vectors
with a symbolic length are compared with Python's ``min``/``max``/``sum`` of the batch alone; and
random claims over small domains are decided by the full prover and checked against brute force
(proved exactly when every point holds; otherwise the counterexample is the lexicographically
smallest failing point; a possible division by zero is an error, never a verdict).

``test_at_least_100000_expressions_were_checked`` asserts the total (run the module whole):
``make test-slow`` or ``pytest -m slow tests/test_fuzz_semantics.py``. The figure is reported in
docs/soundness.md.
"""

from __future__ import annotations

import builtins
import itertools
import math
import os
import random
from unittest import mock

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_semantics import (
    BINOPS,
    COMPARISONS,
    SYMBOLS,
    UNOPS,
    _substituted,
    boolean_expressions,
    check_division_by_zero_agrees,
    evaluate,
    evaluate_bool,
    expressions,
    z3_bool_at,
    z3_int_at,
)

import capproof.prover as prover_module
from capproof import Options, Range, Verdict, obligation
from capproof.arith import (
    Padded,
    int32,
    int64,
    max_of,
    min_of,
    next_power_of_2,
    prev_power_of_2,
    select,
    total,
    uint32,
)
from capproof.prover import prove_obligation
from capproof.symbolic import BIT_WIDTH, SymInt, explore, tracing

pytestmark = [pytest.mark.slow, pytest.mark.sweep]

#: examples per test (override with CAPPROOF_FUZZ_SCALE=0.01 for a quick look; the figure in
#: docs/soundness.md is for scale 1)
SCALE = float(os.environ.get("CAPPROOF_FUZZ_SCALE", "1"))
FUZZ_INT, FUZZ_BOOL, FUZZ_AGG, FUZZ_CLAIMS, FUZZ_BATCHES, FUZZ_ENGINE, FUZZ_ENGINE_CLAIMS = (
    max(1, int(n * SCALE)) for n in (8_000, 4_000, 4_000, 1_000, 1_700, 1_000, 500)
)
#: trees per example of the batched test (Hypothesis draws the generator; see random_tree)
PER_BATCH = 50

COUNTS = {
    "int": 0,
    "bool": 0,
    "aggregate": 0,
    "claim": 0,
    "points": 0,
    "engine": 0,
    "engine_claim": 0,
    "engine_points": 0,
    "side_condition_points": 0,
    "forked": 0,
    # proved claims whose verdict Hypothesis's second opinion (capproof.second_opinion) checked on ints
    "second_opinion": 0,
}
#: the claim fuzzers prove with the second opinion on, at prove's default budget of examples
FUZZ_OPTIONS = Options(density="off", second_opinion=10)
#: how often each engine-vocabulary operator was drawn (reported with the total)
OPS_SEEN: dict[str, int] = {}


def fuzz(n: int):
    return settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))


values = st.one_of(st.integers(-12, 12), st.integers(-(10**6), 10**6))
envs = st.lists(st.fixed_dictionaries({name: values for name in SYMBOLS}), min_size=3, max_size=3)


def _symbolic(tree, evaluator):
    with tracing() as trace:
        try:
            return evaluator(tree, SYMBOLS), trace
        except ZeroDivisionError as error:
            return error, trace


def _concrete(tree, env, evaluator):
    try:
        return evaluator(tree, env)
    except ZeroDivisionError as error:
        return error


@fuzz(FUZZ_INT)
@given(tree=expressions, points=envs)
def test_integer_expressions_agree_with_python(tree, points):
    COUNTS["int"] += 1
    symbolic, trace = _symbolic(tree, evaluate)  # one Z3 term, compared at three points
    for env in points:
        COUNTS["points"] += 1
        concrete = _concrete(tree, env, evaluate)
        if check_division_by_zero_agrees(concrete, symbolic, trace, env):
            continue
        assert type(concrete) is int
        assert z3_int_at(symbolic, env) == concrete, f"tree {tree!r} at {env}"


@fuzz(FUZZ_BOOL)
@given(tree=boolean_expressions, points=envs)
def test_conditions_agree_with_python(tree, points):
    COUNTS["bool"] += 1
    symbolic, trace = _symbolic(tree, evaluate_bool)
    for env in points:
        COUNTS["points"] += 1
        concrete = _concrete(tree, env, evaluate_bool)
        if check_division_by_zero_agrees(concrete, symbolic, trace, env):
            continue
        assert type(concrete) is bool
        assert z3_bool_at(symbolic, env) == concrete, f"condition {tree!r} at {env}"


def random_tree(rng, leaves_left: int = 10):
    """A random integer tree of the same grammar as test_semantics.expressions (at most
    ``leaves_left`` leaves): the batched test draws thousands per Hypothesis example, since
    Hypothesis's own drawing costs ~20 ms per tree on this machine."""
    if leaves_left <= 1 or rng.random() < 0.3:
        r = rng.random()
        if r < 0.45:
            return ("var", rng.choice(list(SYMBOLS)))
        if r < 0.8:
            return ("const", rng.randint(-6, 6))
        return ("const", rng.choice([0, -1, 1]))
    kind = rng.random()
    if kind < 0.7:
        split = rng.randint(1, leaves_left - 1)
        op = rng.choice(sorted(BINOPS))
        return (op, random_tree(rng, split), random_tree(rng, leaves_left - split))
    if kind < 0.85:
        return (rng.choice(sorted(UNOPS)), random_tree(rng, leaves_left - 1))
    third = max(1, leaves_left // 3)
    return ("select", random_condition(rng, third), random_tree(rng, third), random_tree(rng, third))


def random_condition(rng, leaves_left: int = 4, tree=None):
    """A random condition of the grammar of test_semantics.conditions, its operands drawn by
    ``tree`` (``random_tree`` by default)."""
    tree = tree or random_tree
    half = max(1, leaves_left // 2)
    r = rng.random()
    atom = (
        ("cmp", rng.choice(sorted(COMPARISONS)), tree(rng, half), tree(rng, half))
        if r < 0.8
        else ("divides", tree(rng, half), tree(rng, half))
    )
    r = rng.random()
    if r < 0.6:
        return atom
    if r < 0.75:
        return ("not", atom)
    return (rng.choice(["all", "any", "implies"]), atom, random_condition(rng, half, tree))


def random_value(rng):
    return rng.randint(-12, 12) if rng.random() < 0.5 else rng.randint(-(10**6), 10**6)


@fuzz(FUZZ_BATCHES)
@given(seed=st.integers(0, 2**64 - 1))
def test_batches_of_random_expressions_agree_with_python(seed):
    """PER_BATCH integer trees and as many conditions per example, three points each, from a
    generator seeded by Hypothesis (a failure prints the tree and the point)."""
    rng = random.Random(seed)
    for _ in range(PER_BATCH):
        for tree, evaluator, kind in ((random_tree(rng), evaluate, int), (random_condition(rng), evaluate_bool, bool)):
            COUNTS["int" if kind is int else "bool"] += 1
            symbolic, trace = _symbolic(tree, evaluator)
            for _ in range(3):
                env = {name: random_value(rng) for name in SYMBOLS}
                COUNTS["points"] += 1
                concrete = _concrete(tree, env, evaluator)
                if check_division_by_zero_agrees(concrete, symbolic, trace, env):
                    continue
                assert type(concrete) is kind
                at = z3_int_at if kind is int else z3_bool_at
                assert at(symbolic, env) == concrete, f"{tree!r} at {env}"


# --- the engine-code vocabulary (inventory / forks work, machine integers) ----------------------

MASKS = [0, 1, 3, 7, 15, 255, 0xFFFF, 0xFFFFFFFF, 2**64 - 1, ~0, ~1, ~7, ~255, ~0xFFFFFFFF]


def _mask(rng) -> int:
    """A constant for ``& | ^``: a contiguous mask (fast path), or any int up to 40 bits, any sign."""
    return rng.choice(MASKS) if rng.random() < 0.5 else rng.randint(-(2**40), 2**40)


def _builtin_min(a, b):
    return builtins.min(a, b)


def _builtin_max(a, b):
    return builtins.max(a, b)


#: tag -> (arity of subtrees, function of the evaluated subtrees and the node's constant)
ENGINE_OPS = {
    "divmod_q": (2, lambda a, b, c: divmod(a, b)[0]),
    "divmod_r": (2, lambda a, b, c: divmod(a, b)[1]),
    ">>c": (1, lambda a, c: a >> c),
    "<<c": (1, lambda a, c: a << c),
    ">>k": (2, lambda a, k, c: a >> (k % (BIT_WIDTH + 1))),  # a symbolic count in 0..64
    "<<k": (2, lambda a, k, c: a << (k % 17)),  # kept small: 1 << 64 of a 10**60 is fine, but slow
    "&": (1, lambda a, c: a & c),
    "|": (1, lambda a, c: a | c),
    "^": (1, lambda a, c: a ^ c),
    "c&": (1, lambda a, c: c & a),
    "~": (1, lambda a, c: ~a),
    "bit_length": (1, lambda a, c: a.bit_length()),
    "ceil/": (2, lambda a, b, c: math.ceil(a / b)),
    "floor/": (2, lambda a, b, c: math.floor(a / b)),
    "trunc/": (2, lambda a, b, c: math.trunc(a / b)),
    "next_power_of_2": (1, lambda a, c: next_power_of_2(a)),
    "prev_power_of_2": (1, lambda a, c: prev_power_of_2(a)),
    "min": (2, lambda a, b, c: _builtin_min(a, b)),
    "max": (2, lambda a, b, c: _builtin_max(a, b)),
    "abs": (1, lambda a, c: abs(a)),
    "int32": (1, lambda a, c: int32(a)),
    "uint32": (1, lambda a, c: uint32(a)),
    "int64": (1, lambda a, c: int64(a)),
}
FORKING = {"min", "max"}


def random_engine_tree(rng, leaves_left: int = 8):
    """A random tree mixing the base grammar (``random_tree``'s operators) with ENGINE_OPS; each
    ENGINE_OPS node carries its constant (shift count, mask) as its last element."""
    if leaves_left <= 1 or rng.random() < 0.25:
        r = rng.random()
        if r < 0.45:
            return ("var", rng.choice(list(SYMBOLS)))
        return ("const", rng.randint(-6, 6) if r < 0.8 else rng.choice([0, -1, 1, 2**31, 2**32 - 1, -(2**31)]))
    r = rng.random()
    if r < 0.6:
        tag = rng.choice(sorted(ENGINE_OPS))
        arity = ENGINE_OPS[tag][0]
        const = rng.randint(0, 70) if tag in (">>c", "<<c") else _mask(rng) if tag in ("&", "|", "^", "c&") else 0
        if arity == 1:
            return (tag, random_engine_tree(rng, leaves_left - 1), const)
        split = rng.randint(1, leaves_left - 1)
        return (tag, random_engine_tree(rng, split), random_engine_tree(rng, leaves_left - split), const)
    if r < 0.85:
        split = rng.randint(1, leaves_left - 1)
        op = rng.choice(sorted(BINOPS))
        return (op, random_engine_tree(rng, split), random_engine_tree(rng, leaves_left - split))
    third = max(1, leaves_left // 3)
    return (
        "select",
        random_engine_condition(rng, third),
        random_engine_tree(rng, third),
        random_engine_tree(rng, third),
    )


def random_engine_condition(rng, leaves_left: int = 4):
    """A random condition over the engine-code vocabulary (:func:`random_engine_tree` operands)."""
    return random_condition(rng, leaves_left, random_engine_tree)


def evaluate_engine(node, env):
    """Evaluate a tree of random_engine_tree on ints or SymInts (builtin min/max fork: run it
    under ``explore`` when symbolic)."""
    tag = node[0]
    if tag == "var":
        return env[node[1]]
    if tag == "const":
        return node[1]
    if tag in ENGINE_OPS:
        arity, fn = ENGINE_OPS[tag]
        return fn(*(evaluate_engine(child, env) for child in node[1 : 1 + arity]), node[-1])
    if tag in BINOPS:
        return BINOPS[tag](evaluate_engine(node[1], env), evaluate_engine(node[2], env))
    if tag == "select":
        return select(evaluate_engine_bool(node[1], env), evaluate_engine(node[2], env), evaluate_engine(node[3], env))
    raise AssertionError(f"unknown node {node}")


def evaluate_engine_bool(node, env):
    """A condition tree over engine-vocabulary terms (test_semantics' conditions, these leaves)."""
    return evaluate_bool(node, env, term=evaluate_engine)


def _tags(node):
    if isinstance(node, tuple) and node and isinstance(node[0], str):
        yield node[0]
        for child in node[1:]:
            yield from _tags(child)


def _truth(fact: z3.BoolRef, env: dict[str, int]) -> bool | None:
    """``fact`` at ``env``; None where it is undefined (it contains a division by zero there)."""
    ground = _substituted(fact, env)
    return True if z3.is_true(ground) else False if z3.is_false(ground) else None


def _holds_at(fact: z3.BoolRef, env: dict[str, int]) -> bool:
    ground = _substituted(fact, env)
    assert z3.is_true(ground) or z3.is_false(ground), (fact, env)
    return z3.is_true(ground)


def _divisor_zero_at(trace, env) -> bool:
    from test_semantics import _ground_int_or_none

    return any(_ground_int_or_none(term, env) in (0, None) for term, _ in trace.divisors)


def _compare_engine(tree, evaluator, kind, points):
    """Evaluate ``tree`` symbolically once (forking under explore if it uses builtin min/max),
    then at each point: the path whose condition holds gives Python's value, unless Python raises
    ZeroDivisionError (then a recorded divisor is 0 there) or a recorded side condition fails at
    the point (then the prover would report an error; counted in side_condition_points)."""
    for tag in set(_tags(tree)):
        if tag in ENGINE_OPS:
            OPS_SEEN[tag] = OPS_SEEN.get(tag, 0) + 1
    forks = bool(FORKING & set(_tags(tree)))
    if forks:
        COUNTS["forked"] += 1
        with tracing():
            ex = explore(lambda: evaluator(tree, SYMBOLS), budget=512, check_feasible=False)
        assert ex.complete, tree
        paths = [(p.condition.term, p.value, p.error, p.trace) for p in ex.paths]
    else:
        with tracing() as trace:
            try:
                value, error = evaluator(tree, SYMBOLS), None
            except ZeroDivisionError as exc:
                value, error = None, exc
        paths = [(z3.BoolVal(True), value, error, trace)]
    for env in points:
        COUNTS["engine_points"] += 1
        try:
            concrete, raised = evaluator(tree, env), None
        except ZeroDivisionError as exc:
            concrete, raised = None, exc
        live = [p for p in paths if _truth(p[0], env) is not False]  # its condition holds or is undefined (÷0)
        if any(_truth(fact, env) is False for p in live for fact, _ in p[3].side_conditions):
            # an exactness condition fails here (e.g. |a| >= 2**53 under math.trunc(a / b): Python's
            # float differs from the exact quotient): the prover reports such a point as an error
            COUNTS["side_condition_points"] += 1
            continue
        if raised is not None:  # a path whose condition holds (or is undefined: it divides by 0 too) divides by 0
            assert any(error is not None or _divisor_zero_at(trace, env) for _, _, error, trace in live), (
                f"{tree!r} at {env}: Python divides by zero"
            )
            continue
        ((cond, value, error, trace),) = [p for p in paths if _holds_at(p[0], env)]
        assert not trace.misuse, (tree, trace.misuse)
        if error is not None:  # name the error: a path error is not necessarily a division by zero
            raise AssertionError(
                f"{tree!r} at {env}: the symbolic path raised {type(error).__name__}: {error}; Python gives {concrete}"
            )
        if _divisor_zero_at(trace, env):
            raise AssertionError(f"{tree!r} at {env}: symbolic run divides by zero, Python gives {concrete}")
        if not all(_holds_at(fact, env) for fact, _ in trace.side_conditions):
            COUNTS["side_condition_points"] += 1
            continue
        assert type(concrete) is kind, (tree, env, concrete)
        at = z3_int_at if kind is int else z3_bool_at
        assert at(value, env) == concrete, f"{tree!r} at {env}"


@fuzz(FUZZ_ENGINE)
@given(seed=st.integers(0, 2**64 - 1))
def test_engine_vocabulary_expressions_agree_with_python(seed):
    """PER_BATCH engine-vocabulary trees and as many conditions per example, three points each."""
    rng = random.Random(seed)
    for _ in range(PER_BATCH):
        for tree, evaluator, kind in (
            (random_engine_tree(rng), evaluate_engine, int),
            (random_engine_condition(rng), evaluate_engine_bool, bool),
        ):
            COUNTS["engine"] += 1
            _compare_engine(tree, evaluator, kind, [{name: random_value(rng) for name in SYMBOLS} for _ in range(3)])


SIZE = 5
ENTRY_VARS = [SymInt.var(f"v{i}") for i in range(SIZE)]
LENGTH = SymInt.var("n")


@fuzz(FUZZ_AGG)
@given(
    lo=st.integers(-5, 5), width=st.integers(0, 6), fill=st.integers(-12, 12), n=st.integers(1, SIZE), data=st.data()
)
def test_batch_aggregates_of_a_padded_vector_are_those_of_the_batch(lo, width, fill, n, data):
    """min_of/max_of/total of a Padded vector (symbolic length, any fill) = Python's on the batch."""
    COUNTS["aggregate"] += 1
    hi = lo + width
    entries = data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    batch = Padded(ENTRY_VARS, LENGTH, fill, lo, hi)
    env = {"n": n, **{f"v{i}": (entries[i] if i < n else fill) for i in range(SIZE)}}
    with tracing() as trace:
        got = {"min": min_of(batch), "max": max_of(batch), "sum": total(batch)}
    for term, _ in trace.divisors:  # the non-empty requirement on the length: nonzero here
        assert z3_int_at(SymInt(term), env) != 0
    want = {"min": min(entries), "max": max(entries), "sum": sum(entries)}
    assert {k: z3_int_at(v, env) for k, v in got.items()} == want, (entries, fill)
    concrete = Padded([*entries, *[fill] * (SIZE - n)], n, fill, lo, hi)
    assert (min_of(concrete), max_of(concrete), total(concrete)) == (want["min"], want["max"], want["sum"])


X_DOM, Y_DOM = Range(-4, 4), Range(-3, 5)
POINTS = list(itertools.product(range(X_DOM.lo, X_DOM.hi + 1), range(Y_DOM.lo, Y_DOM.hi + 1)))
OUTCOMES = {"proved": 0, "counterexample": 0, "error": 0, "unknown": 0}


@fuzz(FUZZ_CLAIMS)
@given(tree=boolean_expressions)
def test_claims_are_decided_as_brute_force_decides_them(tree):
    """The prover's verdict on ``for all x, y in a small box: tree`` matches enumeration."""
    COUNTS["claim"] += 1
    _decided_as_brute_force(tree, lambda x, y: evaluate_bool(tree, {"x": x, "y": y, "z": 3}))


def _decided_as_brute_force(tree, holds_at, side_condition_errors: bool = False) -> None:
    """Prove ``for all x, y in the box: holds_at(x, y)`` and compare with enumeration: proved iff
    no point fails, a counterexample at the smallest failing point, unknown allowed (never
    proved), an error where the tree divides by zero (or, with ``side_condition_errors``, where an
    encoding side condition fails somewhere in the box)."""

    def claim(x, y):
        return holds_at(x, y)

    ob = obligation(domain={"x": X_DOM, "y": Y_DOM})(claim)
    with mock.patch.object(prover_module, "second_opinion", wraps=prover_module.second_opinion) as opinion:
        r = prove_obligation(ob, FUZZ_OPTIONS)
    if r.verdict is Verdict.PROVED:  # every proof of the fuzzers was also tested on ints by Hypothesis
        assert opinion.call_count == 1, f"{tree!r}: proved without the second opinion"
        COUNTS["second_opinion"] += 1
    OUTCOMES[r.verdict.value] = OUTCOMES.get(r.verdict.value, 0) + 1
    try:
        truth = {(x, y): holds_at(x, y) for x, y in POINTS}
    except ZeroDivisionError:
        assert r.verdict in (Verdict.ERROR, Verdict.UNKNOWN), f"{tree!r}: {r.verdict} {r.message}"
        return
    failing = sorted(p for p, ok in truth.items() if not ok)
    if r.verdict is Verdict.UNKNOWN:
        return  # never proved; allowed, and counted in OUTCOMES
    if side_condition_errors and r.verdict is Verdict.ERROR:
        assert "side condition" in r.message or "2**" in r.message, f"{tree!r}: {r.message}"
        return
    if not failing:
        assert r.verdict is Verdict.PROVED, f"{tree!r}: {r.verdict} {r.message}"
    else:
        assert r.verdict is Verdict.COUNTEREXAMPLE, f"{tree!r}: {r.verdict} {r.message} (fails at {failing[0]})"
        assert (r.counterexample.params["x"], r.counterexample.params["y"]) == failing[0], tree


@fuzz(FUZZ_ENGINE_CLAIMS)
@given(seed=st.integers(0, 2**64 - 1))
def test_engine_vocabulary_claims_are_decided_as_brute_force_decides_them(seed):
    """As above, for a random condition of the engine vocabulary (builtin min/max fork in the
    prover; a possible zero divisor is an error; unknown is allowed, never proved)."""
    COUNTS["engine_claim"] += 1
    tree = random_engine_condition(random.Random(seed))
    _decided_as_brute_force(
        tree, lambda x, y: evaluate_engine_bool(tree, {"x": x, "y": y, "z": 3}), side_condition_errors=True
    )


def test_at_least_100000_expressions_were_checked():
    """The figure reported in docs/soundness.md (run after the fuzz tests above, same module)."""
    if not any(COUNTS[kind] for kind in ("int", "bool", "aggregate", "claim", "engine", "engine_claim")):
        pytest.skip("run the whole module (or -k 'engine_vocabulary or at_least'): the fuzz tests count them")
    expressions_run = (
        COUNTS["int"]
        + COUNTS["bool"]
        + COUNTS["aggregate"]
        + COUNTS["claim"]
        + COUNTS["engine"]
        + COUNTS["engine_claim"]
    )
    print(
        f"\nsemantic fuzzing: {expressions_run} expressions ({COUNTS}); claims: {OUTCOMES}; "
        f"engine operators drawn: {dict(sorted(OPS_SEEN.items()))}"
    )
    if COUNTS["engine"]:
        assert set(OPS_SEEN) == set(ENGINE_OPS), set(ENGINE_OPS) - set(OPS_SEEN)
        assert COUNTS["engine"] >= 100_000 * min(1.0, SCALE)  # the engine vocabulary alone, too
    assert expressions_run >= 100_000 * min(1.0, SCALE)
    if OUTCOMES.get("proved"):
        assert COUNTS["second_opinion"] == OUTCOMES["proved"], (COUNTS["second_opinion"], OUTCOMES)
