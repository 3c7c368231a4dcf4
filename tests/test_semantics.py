"""Symbolic (``SymInt``/``SymBool`` on Z3) and concrete (plain ``int``) semantics must agree.

The property tests build random integer expression trees over the model vocabulary
(``+ - * // %``, unary ``-``, ``abs``, ``cdiv``, ``round_up``, ``minimum``, ``maximum`` and
``select`` on comparison conditions), evaluate each tree once on plain ints and once on
``SymInt.var`` variables, substitute the same values into the resulting Z3 term and compare.
The *same* evaluator runs both times: the vocabulary is polymorphic, which is the point.

Division by zero: when the concrete run raises ``ZeroDivisionError``, the symbolic run must
either raise it too (a concrete zero divisor) or have recorded, in the active
:func:`capproof.symbolic.tracing` trace, a divisor term that is 0 at those values.
"""

from __future__ import annotations

import inspect
import math
import operator
from fractions import Fraction

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capproof.arith import (
    all_of,
    any_of,
    cdiv,
    divides,
    gcd,
    implies,
    maximum,
    minimum,
    not_,
    round_up,
    select,
)
from capproof.errors import NotConcreteError, RealArithmeticError, SymbolicBranchError
from capproof.symbolic import SymBool, SymInt, tracing

# Settings shared by the property tests: fast, no example database written outside tests/.
PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

VARS = ("x", "y", "z")
SYMBOLS = {name: SymInt.var(name) for name in VARS}

# --------------------------------------------------------------------------------------------
# Expression trees: nested tuples, ("var", name) / ("const", c) / (op, child, ...).
# --------------------------------------------------------------------------------------------

BINOPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "cdiv": cdiv,
    "round_up": round_up,
    "minimum": minimum,
    "maximum": maximum,
}
UNOPS = {"neg": operator.neg, "abs": abs}
COMPARISONS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

leaves = st.one_of(
    st.sampled_from(VARS).map(lambda name: ("var", name)),
    st.integers(-6, 6).map(lambda c: ("const", c)),
    st.sampled_from([0, -1, 1]).map(lambda c: ("const", c)),  # extra weight on edge constants
)


def conditions(children: st.SearchStrategy) -> st.SearchStrategy:
    """Comparisons of sub-expressions, ``divides``, and one level of boolean combinators."""
    comparison = st.tuples(st.just("cmp"), st.sampled_from(sorted(COMPARISONS)), children, children)
    atom = st.one_of(comparison, st.tuples(st.just("divides"), children, children))
    return st.one_of(
        comparison,
        atom,
        st.tuples(st.just("not"), atom),
        st.tuples(st.sampled_from(["all", "any", "implies"]), atom, atom),
    )


def extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.sampled_from(sorted(BINOPS)), children, children),
        st.tuples(st.sampled_from(sorted(UNOPS)), children),
        st.tuples(st.just("select"), conditions(children), children, children),
    )


expressions = st.recursive(leaves, extend, max_leaves=10)
boolean_expressions = conditions(expressions)

values = st.one_of(st.integers(-12, 12), st.integers(-(10**6), 10**6))
environments = st.fixed_dictionaries({name: values for name in VARS})


def evaluate(node, env):
    """Evaluate an integer tree; ``env`` maps variable names to ints or SymInts."""
    tag = node[0]
    if tag == "var":
        return env[node[1]]
    if tag == "const":
        return node[1]
    if tag in BINOPS:
        return BINOPS[tag](evaluate(node[1], env), evaluate(node[2], env))
    if tag in UNOPS:
        return UNOPS[tag](evaluate(node[1], env))
    if tag == "select":
        # Arguments are evaluated before the call, concretely as symbolically: both branches run.
        return select(evaluate_bool(node[1], env), evaluate(node[2], env), evaluate(node[3], env))
    raise AssertionError(f"unknown node {node}")


def evaluate_bool(node, env, term=None):
    """Evaluate a condition tree; gives bool on ints and bool or SymBool on SymInts. ``term``
    evaluates the integer leaves (default :func:`evaluate`; the engine vocabulary's in the fuzz)."""
    term = term or evaluate
    tag = node[0]
    if tag == "cmp":
        return COMPARISONS[node[1]](term(node[2], env), term(node[3], env))
    if tag == "divides":
        return divides(term(node[1], env), term(node[2], env))
    if tag == "not":
        return not_(evaluate_bool(node[1], env, term))
    combine = {"all": all_of, "any": any_of, "implies": implies}.get(tag)
    if combine is None:
        raise AssertionError(f"unknown condition {node}")
    return combine(evaluate_bool(node[1], env, term), evaluate_bool(node[2], env, term))


def _substituted(term: z3.ExprRef, env: dict[str, int]) -> z3.ExprRef:
    pairs = [(z3.Int(name), z3.IntVal(value)) for name, value in env.items()]
    return z3.simplify(z3.substitute(term, *pairs))


def z3_int_at(value, env: dict[str, int]) -> int:
    """The concrete int a symbolic result (SymInt, Z3 term or plain int) takes at ``env``."""
    if isinstance(value, SymInt):
        value = value.term
    if isinstance(value, z3.ExprRef):
        ground = _substituted(value, env)
        assert z3.is_int_value(ground), f"{value} did not evaluate to an int at {env}: {ground}"
        return ground.as_long()
    assert type(value) is int, f"symbolic evaluation produced {type(value).__name__}: {value!r}"
    return value


def z3_bool_at(value, env: dict[str, int]) -> bool:
    if isinstance(value, SymBool):
        ground = _substituted(value.term, env)
        assert z3.is_true(ground) or z3.is_false(ground), f"{value} not decided at {env}: {ground}"
        return z3.is_true(ground)
    assert type(value) is bool, f"symbolic condition produced {type(value).__name__}: {value!r}"
    return value


def run_both(tree, env, evaluator):
    """(concrete result or ZeroDivisionError, symbolic result or ZeroDivisionError, trace)."""
    try:
        concrete = evaluator(tree, env)
    except ZeroDivisionError as error:
        concrete = error
    with tracing() as trace:
        try:
            symbolic = evaluator(tree, SYMBOLS)
        except ZeroDivisionError as error:
            symbolic = error
    return concrete, symbolic, trace


def _ground_int_or_none(term: z3.ArithRef, env: dict[str, int]) -> int | None:
    """The value of ``term`` at ``env``, or None if it is undefined there.

    A divisor recorded *after* a division by zero can itself contain ``0 div 0`` (e.g. the
    divisor ``x // x`` simplifies to ``If(x == 0, 0 div 0, 1)``); SMT-LIB leaves that
    unspecified, so it has no value.
    """
    ground = _substituted(term, env)
    return ground.as_long() if z3.is_int_value(ground) else None


def check_division_by_zero_agrees(concrete, symbolic, trace, env):
    """Shared assertions on divisors; returns True when both runs divided by zero."""
    divisor_values = [_ground_int_or_none(term, env) for term, _ in trace.divisors]
    zero_divisors = [value for value in divisor_values if value == 0]
    if isinstance(concrete, ZeroDivisionError):
        assert isinstance(symbolic, ZeroDivisionError) or zero_divisors, (
            f"concrete run divided by zero at {env}, but the symbolic run neither raised "
            f"ZeroDivisionError nor recorded a divisor that is 0 there "
            f"(recorded: {[str(t) for t, _ in trace.divisors]})"
        )
        return True
    assert not isinstance(symbolic, ZeroDivisionError), (
        f"symbolic run raised ZeroDivisionError at {env} where the concrete run gave {concrete}"
    )
    # The concrete run evaluated every division the symbolic run recorded, none by zero:
    # every recorded divisor must have a definite, nonzero value here.
    assert None not in divisor_values and not zero_divisors, (
        f"recorded divisors {[str(t) for t, _ in trace.divisors]} are {divisor_values} at {env}, "
        "though the concrete run did not divide by zero"
    )
    return False


# --------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------


@PROPERTY
@given(tree=expressions, env=environments)
def test_symbolic_and_concrete_integer_semantics_agree(tree, env):
    concrete, symbolic, trace = run_both(tree, env, evaluate)
    if check_division_by_zero_agrees(concrete, symbolic, trace, env):
        return
    assert type(concrete) is int
    assert z3_int_at(symbolic, env) == concrete, f"tree {tree!r} at {env}"


@PROPERTY
@given(tree=boolean_expressions, env=environments)
def test_symbolic_and_concrete_conditions_agree(tree, env):
    concrete, symbolic, trace = run_both(tree, env, evaluate_bool)
    if check_division_by_zero_agrees(concrete, symbolic, trace, env):
        return
    assert type(concrete) is bool
    assert z3_bool_at(symbolic, env) == concrete, f"condition {tree!r} at {env}"


divisors = st.integers(-(10**6), 10**6).filter(lambda b: b != 0)
ints = st.integers(-(10**9), 10**9)


@PROPERTY
@given(a=ints, b=divisors)
def test_cdiv_is_the_vllm_definition(a, b):
    assert cdiv(a, b) == -(a // -b)
    assert cdiv(a, b) == math.ceil(Fraction(a, b))  # and it really is the ceiling


@PROPERTY
@given(x=ints, y=divisors)
def test_round_up_is_the_vllm_definition(x, y):
    assert round_up(x, y) == ((x + y - 1) // y) * y
    if y > 0:  # for a positive step: the least multiple of y that is >= x
        r = round_up(x, y)
        assert r % y == 0 and x <= r < x + y


@PROPERTY
@given(a=st.integers(-50, 50), b=st.integers(-50, 50).filter(lambda b: b != 0))
def test_symbolic_cdiv_and_round_up_match_vllm_definitions(a, b):
    x, y = SYMBOLS["x"], SYMBOLS["y"]
    env = {"x": a, "y": b}
    assert z3_int_at(cdiv(x, y), env) == -(a // -b)
    assert z3_int_at(round_up(x, y), env) == ((a + b - 1) // b) * b
    assert z3_int_at(cdiv(x, b), env) == -(a // -b)
    assert z3_int_at(round_up(a, y), env) == ((a + b - 1) // b) * b


# --------------------------------------------------------------------------------------------
# Python's floor-division signs, spelled out (SMT-LIB div/mod are Euclidean)
# --------------------------------------------------------------------------------------------

SIGN_CASES = [(a, b) for a in (-7, -6, -1, 0, 1, 6, 7) for b in (-3, -2, -1, 1, 2, 3)]


@pytest.mark.parametrize(("a", "b"), SIGN_CASES)
def test_floordiv_and_mod_signs_match_python(a, b):
    x, y = SYMBOLS["x"], SYMBOLS["y"]
    env = {"x": a, "y": b}
    for symbolic, expected in [
        (x // y, a // b),
        (x // b, a // b),
        (a // y, a // b),
        (x % y, a % b),
        (x % b, a % b),
        (a % y, a % b),
        (-x // y, -a // b),
        (abs(x) % y, abs(a) % b),
    ]:
        assert z3_int_at(symbolic, env) == expected, f"{symbolic} at {env}"


# --------------------------------------------------------------------------------------------
# Division by zero and the trace
# --------------------------------------------------------------------------------------------


def test_concrete_zero_divisor_raises_zero_division_error():
    x = SYMBOLS["x"]
    for thunk in (
        lambda: x // 0,
        lambda: x % 0,
        lambda: cdiv(x, 0),
        lambda: round_up(x, 0),
        lambda: x // (3 - 3),
    ):
        with pytest.raises(ZeroDivisionError):
            thunk()


def test_symbolic_divisors_are_recorded_in_the_trace_with_this_files_location():
    x, y = SYMBOLS["x"], SYMBOLS["y"]
    with tracing() as trace:
        x // 3  # concrete divisor: nothing to record
        assert trace.divisors == []
        x // y
        x % (y - 2)
        7 // y
        cdiv(x, y + 1)
    terms = [term for term, _ in trace.divisors]
    # x % (y-2) records y-2 once; cdiv(x, y+1) divides by -(y+1).
    at = {"x": 5, "y": 2}
    assert [z3_int_at(t, at) for t in terms] == [2, 0, 2, -3]
    for _, location in trace.divisors:
        assert "test_semantics.py:" in location
    # Outside tracing() nothing is recorded (and the division still works).
    assert z3_int_at(x // y, {"x": 7, "y": -2}) == -4
    assert len(trace.divisors) == 4


def test_nested_tracing_restores_the_outer_trace():
    x, y = SYMBOLS["x"], SYMBOLS["y"]
    with tracing() as outer:
        with tracing() as inner:
            x // y
        x // (y + 5)
    assert len(inner.divisors) == 1 and len(outer.divisors) == 1
    assert z3_int_at(outer.divisors[0][0], {"x": 0, "y": -5}) == 0


# --------------------------------------------------------------------------------------------
# Operations that need a concrete value, or would be real arithmetic
# --------------------------------------------------------------------------------------------


def test_true_division_on_symint_is_real_arithmetic_unless_floored_or_ceiled():
    x = SYMBOLS["x"]
    with tracing() as trace:
        for use in (
            lambda q: q + 1,
            lambda q: q * 2,
            lambda q: q < 3,
            lambda q: float(q),
            lambda q: int(q),
            lambda q: q == 1,
            lambda q: bool(q),
            lambda q: round(q),
        ):
            with pytest.raises(RealArithmeticError, match="`/`"):
                use(x / 2)
        with pytest.raises(RealArithmeticError):
            (2 / x) - 1
        with pytest.raises(RealArithmeticError):
            (x / SYMBOLS["y"]) * 3
        with pytest.raises(RealArithmeticError):
            x / 2.0
    assert len(trace.misuse) == 11  # every one recorded: a model's except cannot hide it
    with pytest.raises(ZeroDivisionError):
        x / 0


def test_float_operands_raise_real_arithmetic_error():
    x = SYMBOLS["x"]
    for thunk in (lambda: x + 1.5, lambda: x // 2.0, lambda: x % 2.0, lambda: float(x)):
        with pytest.raises(RealArithmeticError):
            thunk()


@pytest.mark.parametrize(
    ("a", "b"),
    [(1.5, 2), (3, 2.0), (SymInt.var("x"), 2.0), (2.0, SymInt.var("x")), (0.0, 1)],
    ids=["float-int", "int-float", "sym-float", "float-sym", "zero-float"],  # str() of a SymInt raises
)
def test_floats_passed_to_cdiv_and_round_up_raise_real_arithmetic_error(a, b):
    with pytest.raises(RealArithmeticError, match="float"):
        cdiv(a, b)
    with pytest.raises(RealArithmeticError, match="float"):
        round_up(a, b)


def test_if_on_symbolic_comparison_raises_branch_error_naming_this_line():
    x = SymInt.var("x")
    with pytest.raises(SymbolicBranchError) as excinfo:
        line = inspect.currentframe().f_lineno + 1
        if x > 0:
            pytest.fail("branched on a symbolic condition")
    message = str(excinfo.value)
    assert f"test_semantics.py:{line}" in message
    assert "select" in message  # tells the author what to use instead


def test_bool_and_boolean_operators_on_symbolic_values_raise_branch_error():
    x, y = SymInt.var("x"), SymInt.var("y")
    with pytest.raises(SymbolicBranchError, match=r"test_semantics\.py:\d+"):
        bool(x)
    with pytest.raises(SymbolicBranchError):
        (x > 0) and (y > 0)  # noqa: B018 - the branch itself must raise
    with pytest.raises(SymbolicBranchError):
        not (x == y)  # noqa: B018 - the branch itself must raise
    # The non-branching spellings work and mean the right thing.
    both = all_of(x > 0, y > 0)
    assert z3_bool_at(both, {"x": 1, "y": 1}) is True
    assert z3_bool_at(both, {"x": 1, "y": 0}) is False
    assert z3_bool_at(not_(x == y), {"x": 3, "y": 3}) is False


def test_range_and_gcd_on_symint_raise_not_concrete_error():
    with pytest.raises(NotConcreteError):
        range(SymInt.var("n"))
    with pytest.raises(NotConcreteError, match="gcd"):
        gcd(SymInt.var("a"), 4)
    with pytest.raises(NotConcreteError):
        gcd(4, SymInt.var("a"))
    with pytest.raises(NotConcreteError):
        math.gcd(SymInt.var("a"), 4)
    with pytest.raises(NotConcreteError):
        int(SymInt.var("a"))
    with pytest.raises(NotConcreteError):
        [1, 2, 3][SymInt.var("i")]
    assert gcd(12, 18) == 6  # concrete ints are fine


def test_select_on_concrete_condition_returns_the_branch_itself():
    x, y = SYMBOLS["x"], SYMBOLS["y"]
    assert select(True, x, y) is x
    assert select(1 > 2, x, y) is y
    assert select(True, 3, 4) == 3
    chosen = select(x > y, x, y)
    assert isinstance(chosen, SymInt)
    assert z3_int_at(chosen, {"x": -3, "y": 8}) == 8


# --------------------------------------------------------------------------------------------
# Engine-code vocabulary: divmod, shifts, constant masks, ~, bit_length, math.ceil/floor
# of integer quotients, next/prev_power_of_2, and the builtins min/max/sum/abs under explore.
# Each: the symbolic result at random points equals Python's on ints, and every side condition
# recorded for exactness holds at those points (the prover checks it on the whole domain).
# --------------------------------------------------------------------------------------------

from capproof.arith import DTYPES, dtype_range, int32, int64, next_power_of_2, prev_power_of_2, uint32, wrap  # noqa: E402
from capproof.symbolic import BIT_WIDTH, FLOAT_EXACT, explore  # noqa: E402

wide = st.one_of(
    st.integers(-40, 40), st.integers(-(2**62), 2**62), st.sampled_from([0, -1, 1, 2**53 - 1, -(2**63) + 1])
)
divisors_ = wide.filter(lambda b: b != 0)


def _agree(fn, env: dict[str, int]) -> None:
    """``fn`` on ints and on SymInts at ``env`` agree, and its side conditions hold at ``env``."""
    expected = fn(**env)
    with tracing() as trace:
        symbolic = fn(**{k: SymInt.var(k) for k in env})
    results = symbolic if isinstance(symbolic, tuple) else (symbolic,)
    wanted = expected if isinstance(expected, tuple) else (expected,)
    for got, want in zip(results, wanted):
        assert z3_int_at(got, env) == want, (fn, env)
    for fact, what in trace.side_conditions:
        assert z3.is_true(_substituted(fact, env)), what
    assert not trace.misuse


@PROPERTY
@given(a=wide, b=divisors_)
def test_divmod_matches_python(a, b):
    _agree(lambda a, b: divmod(a, b), {"a": a, "b": b})


@PROPERTY
@given(a=wide, k=st.integers(0, 70))
def test_shifts_by_constants_match_python(a, k):
    _agree(lambda a: (a >> k, a << k), {"a": a})


@pytest.mark.slow
@PROPERTY
@given(a=wide, k=st.integers(0, BIT_WIDTH))
def test_shifts_by_symbolic_counts_match_python(a, k):
    _agree(lambda a, k: (a >> k, a << k, 1 << k, 5 >> k), {"a": a, "k": k})


@PROPERTY
@given(a=wide, k=st.integers(0, 70))
def test_constant_masks_match_python_including_negatives(a, k):
    low, high = 2**k - 1, ~(2**k - 1)
    _agree(lambda a: (a & low, a & high, low & a, high & a, ~a), {"a": a})


@PROPERTY
@given(
    a=st.one_of(wide, st.integers(-(2**70), 2**70)),
    c=st.one_of(
        st.integers(-70, 70),
        st.integers(-(2**BIT_WIDTH) + 1, 2**BIT_WIDTH - 1),
        st.sampled_from([0xFFFFFFFF, ~0xFF, 0x5555, -0x5556]),
    ),
)
def test_and_or_xor_with_any_constant_match_python_including_negatives(a, c):
    """``&``, ``|``, ``^`` with a constant (any bits, any sign, both operand orders): Python's
    two's-complement results on unbounded ints."""
    _agree(lambda a: (a & c, c & a, a | c, c | a, a ^ c, c ^ a), {"a": a})


@PROPERTY
@given(
    a=st.one_of(
        wide, st.integers(-(2**70), 2**70), st.sampled_from([2**31, 2**31 - 1, -(2**31), -(2**31) - 1, 2**32, 2**63])
    ),
    dtype=st.sampled_from(sorted(DTYPES)),
)
def test_wrap_matches_python_z3_and_numpy(a, dtype):
    """``wrap(x, dtype)`` (``int32(x)`` …) is the same on ints and on Z3 (exact), lies in the
    dtype's range, is congruent to ``x`` modulo ``2**bits``, and equals numpy's narrowing cast
    (``astype``, which wraps) for every ``x`` numpy holds in an int64 / uint64."""
    import numpy as np

    _agree(lambda a: wrap(a, dtype), {"a": a})
    lo, hi = dtype_range(dtype)
    got = wrap(a, dtype)
    bits = DTYPES[dtype][0]
    assert lo <= got <= hi and (got - a) % 2**bits == 0
    if lo <= a <= hi:
        assert got == a
    source = np.int64 if -(2**63) <= a < 2**63 else np.uint64 if 0 <= a < 2**64 else None
    if source is not None:
        assert int(np.array(a, dtype=source).astype(getattr(np, dtype))) == got


def test_int32_names_and_dtype_spellings():
    import numpy as np

    assert int32(7168 * 448000) == -1083703296  # corpus B6's DeepSeek-R1 stride_cm * offs_token
    assert (int32(2**31), int32(2**31 - 1), uint32(-1), uint32(2**32 + 5), int64(2**63)) == (
        -(2**31),
        2**31 - 1,
        2**32 - 1,
        5,
        -(2**63),
    )
    assert wrap(2**31, np.int32) == wrap(2**31, np.dtype("int32")) == wrap(2**31, "int32")
    with pytest.raises(ValueError, match="unknown integer dtype"):
        wrap(1, "int31")
    with pytest.raises(RealArithmeticError):
        int32(1.5)


def test_wrap_runs_under_crosshair():
    """The third semantics: CrossHair's symbolic ints through ``int32`` find the overflow."""
    import crosshair.core_and_libs  # noqa: F401 - installs CrossHair's opcode patches
    from crosshair.core import analyze_function, run_checkables
    from crosshair.fnutil import FunctionInfo
    from crosshair.options import AnalysisOptionSet

    def offset(stride: int, row: int) -> int:
        """
        pre: 0 <= stride < 2**16 and 0 <= row < 2**17
        post: _ == stride * row
        """
        return int32(stride * row)

    opts = AnalysisOptionSet(per_condition_timeout=30, max_uninteresting_iterations=10**6)
    messages = run_checkables(analyze_function(FunctionInfo.from_fn(offset), opts))
    assert messages, "CrossHair found no counterexample"
    import re

    found = re.search(r"offset\((\d+), (\d+)\) \(which returns (-?\d+)\)", messages[0].message)
    assert found, messages[0].message
    stride, row, got = map(int, found.groups())
    assert stride * row > 2**31 - 1 and got == int32(stride * row) != stride * row


@PROPERTY
@given(a=wide, k=st.integers(0, BIT_WIDTH), base=st.integers(-5, 5), nd=st.integers(0, 3))
def test_power_round_math_floor_ceil_of_ints_match_python(a, k, base, nd):
    _agree(
        lambda a, k: (base**k, a**3, round(a), round(a, nd), math.floor(a), math.ceil(a), math.trunc(a)),
        {"a": a, "k": k},
    )


@PROPERTY
@given(a=wide)
def test_bit_length_matches_python(a):
    _agree(lambda a: a.bit_length(), {"a": a})


@pytest.mark.slow
@PROPERTY
@given(a=st.integers(-(FLOAT_EXACT - 1), FLOAT_EXACT - 1), b=divisors_)
def test_ceil_floor_trunc_of_quotients_match_python_floats(a, b):
    _agree(lambda a, b: (math.ceil(a / b), math.floor(a / b), math.trunc(a / b)), {"a": a, "b": b})
    _agree(lambda a: (math.ceil(a / b), math.floor(a / b), math.trunc(a / b)), {"a": a})
    _agree(lambda b: (math.ceil(a / b), math.floor(a / b), math.trunc(a / b)), {"b": b})


def test_quotient_side_condition_is_needed_beyond_2_53():
    """Python rounds ``a / b`` to a float: past 2**53 the float ceil differs from the exact one,
    so capproof records ``|a| < 2**53`` rather than silently proving a different formula."""
    a, b = 2**60 + 1, 2**60
    assert math.ceil(a / b) == 1 and -(-a // b) == 2
    with tracing() as trace:
        math.ceil(SymInt.var("a") / b)
    ((fact, what),) = trace.side_conditions
    assert z3.is_false(_substituted(fact, {"a": a})) and "2**53" in what


def vllm_next_power_of_2(n):  # vllm/utils/math_utils.py (0.33.0), verbatim
    return 1 if n < 1 else 1 << (n - 1).bit_length()


def vllm_prev_power_of_2(n):
    return 0 if n < 1 else 1 << (n.bit_length() - 1)


with tracing() as _POW2_TRACE:
    _N = SymInt.var("n")
    _POW2 = (next_power_of_2(_N), prev_power_of_2(_N))
    # vLLM's own function (it branches on n < 1) runs under explore: one path per direction
    _VLLM_NEXT = explore(lambda: vllm_next_power_of_2(_N))


@settings(PROPERTY, max_examples=40)
@given(n=st.one_of(st.integers(-40, 5000), st.integers(-(2**62), 2**62)))
def test_next_and_prev_power_of_2_match_vllm(n):
    env = {"n": n}
    want = (vllm_next_power_of_2(n), vllm_prev_power_of_2(n))
    assert (next_power_of_2(n), prev_power_of_2(n)) == want
    assert tuple(z3_int_at(v, env) for v in _POW2) == want
    assert all(z3.is_true(_substituted(fact, env)) for fact, _ in _POW2_TRACE.side_conditions)
    assert _VLLM_NEXT.complete and len(_VLLM_NEXT.paths) == 2
    (path,) = [p for p in _VLLM_NEXT.paths if z3.is_true(_substituted(p.condition.term, env))]
    assert z3_int_at(path.value, env) == want[0]


def test_bit_length_and_symbolic_shift_record_their_bounded_encoding():
    with tracing() as trace:
        SymInt.var("a").bit_length()
        1 << SymInt.var("k")
    assert len(trace.side_conditions) == 2
    assert z3.is_false(_substituted(trace.side_conditions[0][0], {"a": 2**BIT_WIDTH}))
    assert z3.is_false(_substituted(trace.side_conditions[1][0], {"k": -1}))


@pytest.mark.slow
@settings(PROPERTY, max_examples=40)
@given(st.lists(wide, min_size=1, max_size=3))
def test_builtin_min_max_sum_abs_fork_and_match_python(xs):
    env = {f"v{i}": v for i, v in enumerate(xs)}
    syms = [SymInt.var(k) for k in env]

    def f(vs):
        return min(vs), max(vs), sum(vs), abs(vs[0]), sum(v > 0 for v in vs), min(vs[0], 3), max(-2, vs[-1])

    want = f(xs)
    ex = explore(lambda: f(syms), budget=4096)
    assert ex.complete
    (path,) = [p for p in ex.paths if z3.is_true(_substituted(p.condition.term, env))]
    assert tuple(z3_int_at(v, env) for v in path.value) == want


def test_unsupported_operations_are_recorded_errors():
    x = SymInt.var("x")
    attempts = [
        lambda: x | x,
        lambda: x ^ x,
        lambda: x & (2**70 + 5),
        lambda: x | -(2**70 + 5),
        lambda: x & x,
        lambda: x.to_bytes(8, "little"),
        lambda: x.as_integer_ratio(),
        lambda: x @ x,
        lambda: round(x, -1),
        lambda: x + "a",
        lambda: x < None,
        lambda: pow(x, 2, 5),
        lambda: 2.5**x,
        lambda: x**x,
        lambda: x**-1,
        lambda: int(x > 0),
        lambda: (x > 0).foo,
    ]
    with tracing() as trace:
        for attempt in attempts:
            with pytest.raises((TypeError, AttributeError)):
                attempt()
    assert len(trace.misuse) == len(attempts)
    # what an int has no slot for, a symbolic int has none for either: Python's own TypeError, as
    # on the int (C code testing for the slot sees no difference); a model's run records it through
    # the exception watch (tests/test_adversarial_mapping_slots_an_int_lacks.py)
    for attempt in (lambda: len(x), lambda: iter(x), lambda: x[0], lambda: 1 in x, lambda: x()):
        with pytest.raises(TypeError):
            attempt()
    for name in ("__len__", "__iter__", "__getitem__", "__contains__", "__call__"):
        assert hasattr(x, name) is hasattr(37, name) is False
    # Known limit: a TypeError Python raises without calling any method of the symbolic int
    # cannot be recorded, e.g. three-argument pow(3, x, 5) (which never tries __rpow__).
    with tracing() as trace:
        with pytest.raises(TypeError):
            pow(3, x, 5)
    assert trace.misuse == []
