"""The C-API fast paths of SymInt (engine overhead) build the very ASTs z3py builds.

Each operation is compared with what capproof built before the fast paths, written out here with
z3py (``z3.simplify(a <op> to_z3_int(b))``), on terms of every wrapper class a SymInt holds
(``ArithRef``, ``IntNumRef``) and on operands of every kind (ints of each sign, symbolic ints,
symbolic numerals): ``eq`` is AST identity, so the solver sees the same query.
"""

from __future__ import annotations

import operator

import pytest
import z3

from capproof.arith import round_up, round_up_lemma, total
from capproof.symbolic import SymInt, ast_array, division_lemma, to_z3_int, tracing, z3_and, z3_ge, z3_implies, z3_le


def _division_lemma_before(a, q):
    """``division_lemma(a, c, q)`` for a constant ``c >= 1`` as capproof built it before the
    :class:`capproof.symbolic.RawTerms` builder (wrapped helpers)."""
    return z3_and(
        z3_implies(z3_ge(a, 0), z3_and(z3_ge(q, 0), z3_le(q, a))),
        z3_implies(z3_le(a, 0), z3_and(z3_ge(q, a), z3_le(q, 0))),
    )


def _round_up_lemma_before(x, y, r):
    ctx, ref = x.ctx, x.ctx.ref()
    plus = z3.ArithRef(z3.z3core.Z3_mk_add(ref, 2, ast_array([x, z3.IntVal(y - 1, ctx)])), ctx)
    times = z3.ArithRef(z3.z3core.Z3_mk_mul(ref, 2, ast_array([x, z3.IntVal(y, ctx)])), ctx)
    return z3_and(z3_ge(r, x), z3_le(r, plus), z3_implies(z3_ge(x, 0), z3_le(r, times)))


def _terms():
    x, y = SymInt.var("x"), SymInt.var("y")
    return [x, x * 3 + y, SymInt(z3.IntVal(7)), SymInt(z3.IntVal(-2)), -x + 5]


OPERANDS = [0, 1, -1, 5, -7, 2**40, -(2**70)]

ARITH = [(operator.add, lambda a, b: a + b), (operator.sub, lambda a, b: a - b), (operator.mul, lambda a, b: a * b)]
COMPARE = [
    (operator.lt, lambda a, b: a < b),
    (operator.le, lambda a, b: a <= b),
    (operator.gt, lambda a, b: a > b),
    (operator.ge, lambda a, b: a >= b),
    (operator.eq, lambda a, b: a == b),
    (operator.ne, lambda a, b: a != b),
]


def _operands():
    return [*OPERANDS, SymInt.var("y"), SymInt.var("z") - 1, SymInt(z3.IntVal(3))]


@pytest.mark.parametrize("op,z3op", ARITH + COMPARE, ids=[f.__name__ for f, _ in ARITH + COMPARE])
def test_fast_binary_operations_build_the_z3py_terms(op, z3op):
    for a in _terms():
        for b in _operands():
            fast = op(a, b)
            slow = z3.simplify(z3op(a.term, to_z3_int(b)))
            assert fast.term.eq(slow), (a, b, fast.term.sexpr(), slow.sexpr())
            assert type(fast.term) is type(slow)
            # the reflected form: ``b op a`` with b an int (Python calls a's reflected method)
            if isinstance(b, int) and not isinstance(b, SymInt):
                fast = op(b, a)
                slow = (
                    z3.simplify(z3op(to_z3_int(b), a.term))
                    if op in (operator.add, operator.sub, operator.mul)
                    else None
                )
                if slow is not None:
                    assert fast.term.eq(slow), (b, a, fast.term.sexpr(), slow.sexpr())


def test_reflected_comparisons_match_z3py():
    # ``c <= x`` reaches SymInt.__ge__; z3py then built ``x >= IntVal(c)``, which Python turns
    # into IntNumRef.__le__ (a subclass's reflected comparison first): ``c <= x``
    x = SymInt.var("x") * 2048 + SymInt.var("c")
    assert (-(2**31) <= x).term.eq(z3.simplify(x.term >= z3.IntVal(-(2**31))))
    assert (-(2**31) <= x).term.sexpr().startswith("(<=")
    assert (x == 3).term.eq(z3.simplify(x.term == z3.IntVal(3)))


def test_negation_and_floor_division_by_a_constant():
    for a in _terms():
        assert (-a).term.eq(z3.simplify(-a.term))
        for b in (1, 2, 16, 2**33):
            with tracing() as fast_trace:
                fast = a // b
            q = a.term / b
            assert fast.term.eq(z3.simplify(q))
            [lemma] = fast_trace.lemmas
            assert lemma.eq(_division_lemma_before(a.term, q))
            assert division_lemma(a.term, b, q).eq(lemma)


def test_round_up_and_total_terms_and_lemmas():
    counts = [SymInt.var(f"c[{i}]") for i in range(6)]
    with tracing() as trace:
        fast = total(round_up(c, 16) for c in counts)
    terms = []
    lemmas = []
    for c in counts:
        s = z3.simplify(z3.simplify(c.term + z3.IntVal(16)) - z3.IntVal(1))
        q = s / 16
        r = z3.simplify(z3.simplify(q) * z3.IntVal(16))
        lemmas += [_division_lemma_before(s, q), _round_up_lemma_before(c.term, 16, r)]
        assert round_up_lemma(c.term, 16, r).eq(lemmas[-1])
        terms.append(r)
    assert fast.term.eq(z3.simplify(z3.Sum(terms)))
    assert len(trace.lemmas) == len(lemmas) and all(a.eq(b) for a, b in zip(trace.lemmas, lemmas))


def test_repeated_roundings_record_the_same_lemmas():
    # vLLM's write positions round each expert's count again before every later expert: each
    # rounding records its lemmas again, the same terms in the same order
    counts = [SymInt.var(f"c[{i}]") for i in range(4)]
    with tracing() as trace:
        sums = [total(round_up(c, 16) for c in counts[:k]) for k in range(1, 5)]
    expected = []
    for k in range(1, 5):
        for c in counts[:k]:
            s = z3.simplify(z3.simplify(c.term + z3.IntVal(16)) - z3.IntVal(1))
            q = s / 16
            expected += [
                _division_lemma_before(s, q),
                _round_up_lemma_before(c.term, 16, z3.simplify(z3.simplify(q) * z3.IntVal(16))),
            ]
    assert len(trace.lemmas) == len(expected) == 20
    assert all(a.eq(b) for a, b in zip(trace.lemmas, expected))
    assert sums[-1].term.eq(z3.simplify(z3.Sum([z3.simplify(z3.simplify((c.term + 15) / 16) * 16) for c in counts])))


@pytest.mark.parametrize("i,lo,hi,fill", [(0, 0, 5, 0), (3, -2, 7, 9), (63, 1, 1, -1), (5, 0, 2**40, 0)])
def test_batch_entry_bounds_with_a_symbolic_length_build_the_z3py_terms(i, lo, hi, fill):
    """The per-entry domain bounds of a batch whose length is a parameter (``encode._entry_bound``,
    ``_padding_bound``): the terms z3py builds for ``Implies(i < n, And(e >= lo, e <= hi))`` and
    ``Implies(i >= n, e == fill)`` (Python's reflected ``n > i``, ``n <= i``), the very ASTs."""
    from capproof.encode import _entry_bound, _padding_bound

    n, e = z3.Int("n"), z3.Int("e")
    built, z3py = _entry_bound(i, n, e, lo, hi), z3.Implies(i < n, z3.And(e >= lo, e <= hi))
    assert built.eq(z3py) and built.get_id() == z3py.get_id()
    built, z3py = _padding_bound(i, n, e, fill), z3.Implies(i >= n, e == fill)
    assert built.eq(z3py) and built.get_id() == z3py.get_id()


def test_implies_and_all_of_build_the_z3py_terms():
    """``arith.implies`` and ``arith.all_of`` over symbolic conditions: the very term (and id)
    ``z3.simplify(z3.Implies(...))`` / ``z3.simplify(z3.And(...))`` gives, including conditions
    that simplify away (``x >= x``) and a mix with a concrete bool (z3py's path)."""
    from capproof.arith import all_of, implies

    x, n = SymInt.var("x"), SymInt.var("n")
    conds = [x >= 3, 2 < n, x == n + 1, x >= x, n <= 7]
    for p in conds:
        for c in conds:
            built = implies(p, c).term
            z3py = z3.simplify(z3.Implies(p.term, c.term))
            assert built.eq(z3py) and built.get_id() == z3py.get_id()
    for k in range(1, len(conds) + 1):
        built = all_of(*conds[:k]).term
        z3py = z3.simplify(z3.And(*[c.term for c in conds[:k]]))
        assert built.eq(z3py) and built.get_id() == z3py.get_id()
    assert all_of(conds[0], True).term.eq(z3.simplify(z3.And(conds[0].term, True)))
    assert implies(True, conds[1]).term.eq(z3.simplify(z3.Implies(True, conds[1].term)))


def _ids_after(build) -> tuple[list[int], object]:
    """In a fresh Z3 context: a model of a few constraints over ``x0..x5`` (one entry left to model
    completion), ``build(model, terms)``, then the ids of terms made after it (Z3 reuses freed ids:
    equal ids mean the same terms were created and freed in the same order)."""
    from capproof.symbolic import fresh_z3_context

    with fresh_z3_context():
        xs = [z3.Int(f"x{i}") for i in range(6)]
        s = z3.Solver()
        s.add(xs[0] + xs[1] == 7, xs[2] > 40, xs[3] * 3 == xs[4] + 1)
        assert s.check() == z3.sat
        model = s.model()
        throwaway = [model.eval(x + 1, model_completion=True) for x in xs]  # freed numerals to reuse
        del throwaway
        built = build(model, [xs[0] + 0, *xs[1:], z3.IntVal(5)])  # a numeral term: not reflected
        after = [z3.IntVal(1234567), xs[0] * 11 + 3, z3.Int("later")]
        return [built.get_id(), *(t.get_id() for t in after)], built.sexpr()


def test_differs_from_builds_the_z3py_term_with_the_same_ids():
    """``differs_from`` (the semantics probe's second point): the very AST of
    ``z3.And(*[t != model.eval(t, model_completion=True) for t in terms])``, and the terms made
    after it get the same ids as after z3py's (Z3's later answers depend on them)."""
    from capproof.symbolic import differs_from

    z3py = _ids_after(lambda model, terms: z3.And(*[t != model.eval(t, model_completion=True) for t in terms]))
    fast = _ids_after(differs_from)
    assert fast == z3py
    x = z3.Int("x")
    s = z3.Solver()
    s.add(x == 3)
    s.check()
    model = s.model()
    assert differs_from(model, [x, x + 2]).eq(
        z3.And(x != model.eval(x, model_completion=True), x + 2 != model.eval(x + 2, model_completion=True))
    )


def test_differs_anywhere_builds_z3pys_or_with_the_same_ids():
    """``differs_from(..., anywhere=True)`` (the aggregate path's second probe point)
    is ``z3.Or(*[t != model.eval(t, model_completion=True) for t in terms])``: the same AST, and
    the terms made after it get the same ids."""
    from capproof.symbolic import differs_from

    z3py = _ids_after(lambda model, terms: z3.Or(*[t != model.eval(t, model_completion=True) for t in terms]))
    fast = _ids_after(lambda model, terms: differs_from(model, terms, anywhere=True))
    assert fast == z3py


def test_tracking_literals_are_read_by_name_as_printed():
    """``encode.track``/``core_labels`` (z3's printer was a tenth of the engine's time):
    the literal's name is what ``str()`` prints, and a core's labels are those of
    ``[trackers[str(t)] for t in core if str(t) in trackers]``, in order."""
    from capproof.encode import core_labels, literal_name, new_solver, track

    x, y = z3.Int("x"), z3.Int("y")
    s, trackers = new_solver(10_000), {}
    for label, cond in [("x >= 3", x >= 3), ("y >= x", y >= x), ("unused", y <= 100), ("y <= 2", y <= 2)]:
        track(s, trackers, label, cond)
    assert s.check() == z3.unsat
    core = s.unsat_core()
    assert all(literal_name(t) == str(t) for t in core) and len(core) >= 2
    assert core_labels(core, trackers) == [trackers[str(t)] for t in core if str(t) in trackers]
    assert set(core_labels(core, trackers)) == {"x >= 3", "y >= x", "y <= 2"}
    assert list(trackers) == [f"__track_{k}" for k in range(4)] == [str(z3.Bool(n)) for n in trackers]
    assert literal_name(x + 1) == str(x + 1) and literal_name(z3.Bool("p")) == "p"


@pytest.mark.parametrize("value", [0, 7, -3, 2**70])
def test_equal_int_builds_the_z3py_term_with_the_same_ids(value):
    """``equal_int`` (``CaseProblem.fix``: pinning a batch to a point) is z3py's
    ``term == value``: the same AST, and the terms made after it get the same ids."""
    from capproof.symbolic import equal_int

    z3py = _ids_after(lambda model, terms: z3.And(*[t == value for t in terms[:-1]]))
    fast = _ids_after(lambda model, terms: z3.And(*[equal_int(t, value) for t in terms[:-1]]))
    assert fast == z3py
    x = z3.Int("x")
    assert equal_int(x, value).eq(x == value) and equal_int(x + 1, value).eq(x + 1 == value)
    assert equal_int(z3.IntVal(4), value).eq(z3.IntVal(4) == value)  # a numeral: z3py's own path


@pytest.mark.parametrize("op", ["<=", ">=", "=="])
@pytest.mark.parametrize("value", [0, 9, -4, 2**70])
def test_int_relation_builds_the_z3py_term_with_the_same_ids(op, value):
    """``int_relation`` (the bounds of minimisation and density queries) is z3py's
    ``term <= value`` / ``term >= value`` / ``term == value``: the same AST, and the terms made
    after it get the same ids; asserted with ``assert_terms``, the solver holds the same query."""
    from capproof.encode import assert_terms, new_solver
    from capproof.symbolic import fresh_z3_context, int_relation

    z3op = {"<=": operator.le, ">=": operator.ge, "==": operator.eq}[op]
    z3py = _ids_after(lambda model, terms: z3.And(*[z3op(t, value) for t in terms[:-1]]))
    fast = _ids_after(lambda model, terms: z3.And(*[int_relation(t, op, value) for t in terms[:-1]]))
    assert fast == z3py
    x = z3.Int("x")
    assert int_relation(x, op, value).eq(z3op(x, value)) and int_relation(x + 1, op, value).eq(z3op(x + 1, value))
    assert int_relation(z3.IntVal(4), op, value).eq(z3op(z3.IntVal(4), value))  # a numeral: z3py's own path

    def query(fast: bool):
        with fresh_z3_context():
            y = z3.Int("y")
            s = new_solver(10_000)
            s.push()
            if fast:
                assert_terms(s, [int_relation(y, op, value), y * 2 >= 3, True])
            else:
                s.add(z3op(y, value), y * 2 >= 3, True)
            answer = s.check()
            text = s.sexpr()
            s.pop()
            return text, answer, z3.Int("after").get_id(), z3.IntVal(31337).get_id()

    assert query(True) == query(False)


def test_track_makes_z3pys_calls_with_the_same_ids():
    """``encode.track`` through the C API: the terms made after tracking get the ids
    they get after z3py's ``s.assert_and_track(cond, z3.Bool(name))``, and the query is the same
    (the solver's assertions print alike)."""
    from capproof.encode import new_solver, track
    from capproof.symbolic import fresh_z3_context

    def run(fast: bool):
        with fresh_z3_context():
            x, y = z3.Int("x"), z3.Int("y")
            s, trackers = new_solver(10_000), {}
            for k, (label, cond) in enumerate([("x >= 3", x >= 3), ("y >= x", y >= x), ("y <= 2", y <= 2)]):
                if fast:
                    track(s, trackers, label, cond)
                else:
                    trackers[f"__track_{k}"] = label
                    s.assert_and_track(cond, z3.Bool(f"__track_{k}"))
                del cond
            after = [z3.IntVal(98765), x * 7 + y, z3.Bool("later")]
            answer = s.check()
            return [t.get_id() for t in after], s.sexpr(), answer, sorted(str(t) for t in s.unsat_core())

    assert run(True) == run(False)
    assert run(True)[2] == z3.unsat


@pytest.mark.parametrize("n", [0, 1, 8, 9, 64])
def test_plain_is_true_only_when_every_entry_is_exactly_an_int_or_a_bool(n):
    """``arith.all_plain`` (the builtins' fast path of total/max_of/all_of...) scans short lists in
    Python and longer ones in C: both give True only when every entry's type is exactly int or
    bool, whatever the position of the one that is not (a SymInt, a float, an int subclass)."""
    from capproof.arith import all_plain

    class Sub(int):
        pass

    ints = [3] * n
    assert all_plain(ints) and all_plain(tuple(ints)) and all_plain([True] * n)
    for odd in (SymInt(z3.Int("x")), 1.0, Sub(1)):
        for at in range(n):
            assert not all_plain(ints[:at] + [odd] + ints[at + 1 :]), (n, at, odd)


def test_a_padded_batch_of_ints_remembers_its_aggregates_and_recomputes_when_its_shape_moves():
    """``total``/``max_of``/``min_of`` of a Padded batch of plain ints are computed once and
    remembered on the batch (the int probe evaluates many points sharing one batch, then again in
    its re-check); the remembered value is the builtins' on the batch, and a batch whose length or
    fill was replaced computes again. A symbolic batch remembers nothing."""
    from capproof.arith import Padded, max_of, min_of

    p = Padded((5, 2, 9, 0), 3, 0, 1, 9)
    assert (total(p), max_of(p), min_of(p)) == (16, 9, 2)
    assert (p.known("total"), p.known("max_of"), p.known("min_of")) == (16, 9, 2)
    assert (total(p), max_of(p), min_of(p)) == (16, 9, 2)  # remembered: the same values
    p.length = 4  # the batch is now (5, 2, 9, 0): its minimum moved
    assert p.known("total") is p.known("max_of") is p.known("min_of") is None
    assert (total(p), max_of(p), min_of(p)) == (16, 9, 0)
    q = Padded((5, 2, 7, 7), 2, 7, 1, 9)  # padded with 7: the batch alone counts
    assert (total(q), max_of(q), min_of(q)) == (7, 5, 2) == (q.known("total"), q.known("max_of"), q.known("min_of"))
    x = SymInt.var("x")
    s = Padded((x, x + 1), 2, 0, 0, 10)
    assert isinstance(total(s), SymInt) and s.known("total") is None and s.known("max_of") is None


def test_maximum_and_minimum_of_two_symbolic_ints_stay_symbolic():
    """The two-int fast path of ``maximum``/``minimum`` looks at the exact type: a SymInt reports
    ``int`` as its ``__class__`` (so ``isinstance(x, int)``), and comparing two with ``max`` would
    ask their truth value (a branch), not build ``If(y > x, y, x)``."""
    from capproof.arith import maximum, minimum

    x, y = SymInt.var("x"), SymInt.var("y")
    assert x.__class__ is int  # what the fast path must not be fooled by
    with tracing():
        hi, lo = maximum(x, y), minimum(x, 3)
    assert isinstance(hi, SymInt) and isinstance(lo, SymInt)
    s = z3.Solver()
    s.add(to_z3_int(x) == 5, to_z3_int(y) == 2)
    assert s.check() == z3.sat
    m = s.model()
    assert m.eval(to_z3_int(hi)).as_long() == 5 and m.eval(to_z3_int(lo)).as_long() == 3
    assert (maximum(4, 9), minimum(4, 9), maximum(True, 0), minimum(3, 1, 2)) == (9, 4, True, 1)


@pytest.mark.parametrize("value", [0, 5, -5, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**70])
def test_model_values_read_as_int64_or_text_are_the_numerals(value):
    """``encode._value`` (a batch entry's value in a model) reads a numeral as a
    64-bit int where it fits and as text otherwise: the model's value either way."""
    from capproof.encode import _value

    x = SymInt.var("x")
    s = z3.Solver()
    s.add(x.term == value)
    assert s.check() == z3.sat
    model = s.model()
    assert _value(model, x) == value == model.eval(x.term, model_completion=True).as_long()
    assert _value(model, SymInt.var("unconstrained")) == 0 and _value(model, 7) == 7


def test_uninterpreted_constants_walk_matches_z3pys_and_makes_no_term():
    """``uninterpreted_constants`` through Z3's C API: the names, in the order of
    z3py's walk, and the decls of z3py's; no term is made (the ids of later terms are those after
    z3py's walk); a term under a quantifier takes z3py's walk."""
    from capproof.symbolic import _uninterpreted_constants_z3py, fresh_z3_context, uninterpreted_constants

    def terms():
        x, y, n = z3.Ints("x y n")
        each = z3.Int("each(counts)#0")
        return [z3.If(x > 3, (y + each) / 8, n * 2) <= x + 1, z3.And(y >= 0, n <= 64, z3.Bool("p")), x - y == 5]

    for walk in (uninterpreted_constants, _uninterpreted_constants_z3py):
        assert walk([]) == {}

    def run(walk):
        with fresh_z3_context():
            ts = terms()
            found = walk(ts)
            after = [z3.IntVal(424242), z3.Int("later") * 3]
            return list(found), [d.sexpr() for d in found.values()], [t.get_id() for t in after]

    assert run(uninterpreted_constants) == run(_uninterpreted_constants_z3py)
    assert run(uninterpreted_constants)[0] == list(_uninterpreted_constants_z3py(terms()))
    assert set(run(uninterpreted_constants)[0]) == {"x", "y", "n", "each(counts)#0", "p"}
    x = z3.Int("x")
    q = z3.ForAll([x], x + z3.Int("z") >= z3.Int("w"))
    assert uninterpreted_constants([q, z3.Int("v") > 0]) == _uninterpreted_constants_z3py([q, z3.Int("v") > 0])
    assert set(uninterpreted_constants([q])) == {"z", "w"}


@pytest.mark.parametrize("value", [0, 41, -7, 2**63, -(2**70)])
def test_model_int_and_model_true_read_z3pys_values_with_the_same_ids(value):
    """``model_int``/``model_true`` (every model read of the prover and the aggregate path, session
    19) are ``model.eval(t, model_completion=True).as_long()`` and ``z3.is_true(model.eval(...))``:
    the same values, and the terms made after the reads get the same ids as after z3py's."""
    from capproof.symbolic import fresh_z3_context, model_int, model_true

    def run(fast: bool):
        with fresh_z3_context():
            x, y = z3.Int("x"), z3.Int("y")
            s = z3.Solver()
            s.add(x == value, y > x)
            assert s.check() == z3.sat
            model = s.model()
            terms = [x, x * 3 + 1, z3.Int("free"), y - x, z3.IntVal(5)]
            claims = [x == value, x > value, z3.Bool("p"), z3.BoolVal(True)]
            if fast:
                ints = [model_int(model, t) for t in terms]
                bools = [model_true(model, c) for c in claims]
            else:
                ints = [model.eval(t, model_completion=True).as_long() for t in terms]
                bools = [z3.is_true(model.eval(c, model_completion=True)) for c in claims]
            after = [z3.IntVal(777001), x * 13 - y, z3.Int("later")]
            return ints, bools, [t.get_id() for t in after]

    assert run(True) == run(False)
    assert run(True)[0][:3] == [value, 3 * value + 1, 0] and run(True)[1] == [True, False, False, True]


def test_a_symbolic_variable_is_z3pys_constant_with_the_same_ids():
    """``SymInt.var`` through the C API is ``SymInt(z3.Int(name))``: the same
    constant, and the terms made after it get the same ids."""
    from capproof.symbolic import fresh_z3_context

    def run(fast: bool):
        with fresh_z3_context():
            made = [SymInt.var(n) if fast else SymInt(z3.Int(n)) for n in ("a", "counts[3]", "a", "b")]
            after = [z3.IntVal(99991), made[0].term + made[3].term, z3.Int("later")]
            return [m.term.sexpr() for m in made], [m.term.get_id() for m in made], [t.get_id() for t in after]

    assert run(True) == run(False)
    x = SymInt.var("x")
    assert type(x.term) is z3.ArithRef and x.term.eq(z3.Int("x")) and z3.is_int(x.term)
