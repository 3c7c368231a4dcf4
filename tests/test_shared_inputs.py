"""The cases of one obligation share their symbolic inputs and memoised witness values
(``encode.SharedInputs``, engine overhead): the same verdicts, cores,
counterexamples and witnesses as cases built one by one."""

from __future__ import annotations

import os

import pytest
import z3

from capproof import Options
from capproof.encode import SharedInputs, build_paths, checked_domains, evaluate
from capproof.loader import load_file
from capproof.prover import _prove_case, prove_obligation
from capproof.symbolic import SymInt, fresh_z3_context, tracing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HEADER = (
    "from capproof import Range, Choice, Vector, obligation, at_most, total, implies, all_of, round_up\nCALLS = []\n"
)


def _load(path, name):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    return next(i for i in items if i.name == name)


def _outcomes(ob, shared: bool, derived: bool = True):
    """Every case of ``ob`` decided in declared order in one fresh Z3 context, as the prover does,
    with the inputs shared (one SharedInputs; ``derived=False``: without the values it remembers
    derived from them) or made per case."""
    import itertools

    options = Options()
    with fresh_z3_context():
        finite, ranges, vectors = checked_domains(ob, {}, options.rlimit)
        common = SharedInputs() if shared else None
        if common is not None and not derived:
            common.derived = None  # type: ignore[assignment]
        out = []
        for combo in itertools.product(*finite.values()):
            fixed = dict(zip(finite, combo))
            o = _prove_case(ob, fixed, ranges, vectors, options, options.rlimit, None, None, True, None, common)
            # a core as a set: the report lists it in declared order
            out.append((fixed, o.kind, sorted(o.core), o.params, o.values, o.minimized, o.message))
        return out


def test_slot_mapping_cases_decide_the_same_with_shared_inputs():
    """The 24 cases of the bounded slot-mapping obligation (a 64-request batch with a symbolic
    length): the same kind, unsat core, counterexample point and values case by case."""
    ob = _load(os.path.join(ROOT, "spec", "per_batch_buffers.py"), "slot_mapping_fits_before_14024")
    per_case = _outcomes(ob, shared=False)
    together = _outcomes(ob, shared=True)
    assert [o[1] for o in per_case].count("counterexample") == 9  # proofs/per_batch_buffers.md: 9 of 24
    assert together == per_case


def test_choice_lengths_get_inputs_per_length_and_the_same_verdict(spec_file):
    """A batch length case-split as a Choice: one set of inputs per length, shared by the cases of
    that length; the obligation's verdict and counterexample are those of per-case inputs."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"n": Choice(2, 3), "k": Choice(1, 2, 3), "cap": Range(0, 64),
                    "xs": Vector(3, Range(0, 9), length="n")},
            assumptions={"k small": lambda k: k <= 2})
def fits(n, k, cap, xs):
    return at_most(demand=total(round_up(x, k) for x in xs), capacity=cap + 3 * k)
"""
    )
    ob = _load(path, "fits")
    per_case = _outcomes(ob, shared=False)
    together = _outcomes(ob, shared=True)
    assert together == per_case
    assert {o[1] for o in together} == {"counterexample", "excluded"}
    with fresh_z3_context():
        finite, ranges, vectors = checked_domains(ob, {}, Options().rlimit)
        common = SharedInputs()
        a = common.symbolic_inputs(ranges, vectors, {"n": 2, "k": 1})
        assert common.symbolic_inputs(ranges, vectors, {"n": 2, "k": 3}) is a
        b = common.symbolic_inputs(ranges, vectors, {"n": 3, "k": 1})
        assert b is not a and len(common.inputs) == 2
        assert [label for label, _ in b[1]] == [label for label, _ in a[1]]
    r = prove_obligation(ob)
    assert r.verdict.value == "counterexample" and r.counterexample.params["n"] == 2


def _witness_spec(spec_file):
    return spec_file(
        HEADER
        + """
def full(xs, n, k, cap):
    CALLS.append(k)
    return all_of(cap >= 1, *(implies(i < n, x == k + 1) for i, x in enumerate(xs)))


def halves(xs, k, cap):
    CALLS.append(("halves", k))
    return all_of(cap >= 1, *(x // 2 == k for x in xs))


@obligation(domain={"k": Choice(1, 2, 3), "d": Choice(1, 2), "cap": Range(1, 40), "n": Range(1, 4),
                    "xs": Vector(4, Range(1, 9), length="n")},
            assumptions={"within": lambda xs, cap: total(xs) <= cap},
            expect="counterexample",
            witnesses={"every entry k + 1": full, "every half k": halves})
def slots(k, d, cap, n, xs):
    return at_most(demand=total(xs) + (k - 1) * n * d, capacity=cap + 2 * n)
"""
    )


def test_a_witness_is_evaluated_once_per_distinct_arguments(spec_file):
    """A witness that records nothing (no division) is evaluated symbolically once per value of
    the case-split parameter it takes, not once per case; one that divides (a lemma recorded) is
    evaluated in every case. The memoised value is the very term a new call builds."""
    ob = _load(_witness_spec(spec_file), "slots")
    calls = ob.func.__globals__["CALLS"]
    with fresh_z3_context():
        finite, ranges, vectors = checked_domains(ob, {}, Options().rlimit)
        common = SharedInputs()
        built = {}
        for k in (1, 2, 3):
            for d in (1, 2):
                built[(k, d)] = build_paths(ob, {"k": k, "d": d}, ranges, vectors, shared=common)
        symbolic = [c for c in calls if not isinstance(c, tuple)]
        assert sorted(symbolic) == [1, 2, 3]  # "full": once per k, not once per (k, d)
        assert len([c for c in calls if isinstance(c, tuple)]) == 6  # "halves" divides: every case
        for (k, d), cp in built.items():
            [case] = cp.paths
            again = evaluate(ob, {**{"k": k, "d": d}, **case.scalars, **case.vectors})
            assert case.ev.witnesses["every entry k + 1"].term.eq(again.witnesses["every entry k + 1"].term)
            assert case.ev.witnesses["every half k"].term.eq(again.witnesses["every half k"].term)
            assert len(case.ev.lemmas) == len(again.lemmas)  # the halves' division lemmas in every case


def test_memoised_witnesses_find_the_same_witnesses(spec_file):
    """The whole obligation: the same counterexample and trigger witnesses as with the witnesses
    evaluated per case (replayed on ints either way)."""
    path = _witness_spec(spec_file)
    ob = _load(path, "slots")
    shared = prove_obligation(ob)
    import capproof.encode as encode

    original = encode.SharedInputs.__init__

    def no_memo(self):  # the inputs shared, each witness evaluated again in every case
        original(self)
        self.witnesses = None

    encode.SharedInputs.__init__ = no_memo
    try:
        per_case = prove_obligation(_load(path, "slots"))
    finally:
        encode.SharedInputs.__init__ = original
    assert shared.verdict.value == per_case.verdict.value == "counterexample"
    assert shared.counterexample.params == per_case.counterexample.params
    assert [w.to_json() for w in shared.witnesses] == [w.to_json() for w in per_case.witnesses]
    assert any(w.found for w in shared.witnesses)


def test_witness_memo_keys_on_the_argument_objects():
    """Equal ints share an entry; distinct symbolic objects (even for the same Z3 term) do not."""
    from capproof.encode import _witness

    class Ob:
        @staticmethod
        def witness_params(name):
            return ["x", "k"]

    seen = []

    def w(x, k):
        seen.append(k)
        return x > k

    memo: dict = {}
    with fresh_z3_context():
        x, y = SymInt.var("x"), SymInt.var("x")
        with tracing() as trace:
            first = _witness(Ob, "w", w, {"x": x, "k": 1}, trace, memo)
            assert _witness(Ob, "w", w, {"x": x, "k": 1}, trace, memo) is first
            _witness(Ob, "w", w, {"x": x, "k": 2}, trace, memo)
            _witness(Ob, "w", w, {"x": y, "k": 1}, trace, memo)
        assert seen == [1, 2, 1]
        assert isinstance(first.term, z3.BoolRef)


def test_remembered_roundings_give_the_terms_and_lemmas_of_new_ones():
    """``round_up`` of a shared input with a memo (``SharedInputs.derived``): in a
    second trace the same result and the same two lemmas (the very ASTs) as a rounding made anew,
    recorded in the same order; one entry per distinct (input, block)."""
    from capproof.arith import round_up, total

    with fresh_z3_context():
        xs = [SymInt.var(f"c[{i}]") for i in range(3)]
        memo: dict = {}
        made = []
        for _ in range(2):  # two cases sharing the inputs
            with tracing() as trace:
                trace.derived = memo
                t = total(round_up(x, b) for x in xs for b in (16, 64))
            with tracing() as fresh:
                f = total(round_up(x, b) for x in xs for b in (16, 64))
            assert t.term.eq(f.term)
            assert len(trace.lemmas) == len(fresh.lemmas) == 12
            assert all(a.eq(b) for a, b in zip(trace.lemmas, fresh.lemmas))
            made.append(t)
        assert len(memo) == 6 and all(v[2] is x for x, v in zip([x for x in xs for _ in (16, 64)], memo.values()))
        with tracing() as trace:  # a symbolic block size, or none remembered: the plain path
            trace.derived = memo
            round_up(xs[0], SymInt.var("b"))
        assert len(memo) == 6 and round_up(7, 16) == 16 and round_up(-3, 4) == 0


@pytest.mark.slow
def test_wna16_cases_decide_the_same_with_remembered_roundings(monkeypatch):
    """The 16 cases of ``wna16_reads_within_sorted_ids`` (4 of them round the same counts by the
    same block size): the same kind, core, counterexample values and minimised point case by case
    with the roundings remembered across cases as without. A 64-expert routing is minimised by its
    sum (more than ``ENTRYWISE_LIMIT`` entries), so which expert gets the count is Z3's choice (it
    moves with term ids, as with the inputs shared or not): its sum is compared there. The
    obligation's verdict and counterexample (the least over the cases) are the same."""
    from capproof.encode import ENTRYWISE_LIMIT

    ob = _load(os.path.join(ROOT, "spec", "moe_align.py"), "wna16_reads_within_sorted_ids")

    def determined(outcomes):
        out = []
        for fixed, kind, core, params, values, minimized, message in outcomes:
            point = {k: (sum(v) if isinstance(v, list) and len(v) > ENTRYWISE_LIMIT else v) for k, v in params.items()}
            out.append((fixed, kind, core, point, values, minimized, message))
        return out

    without = _outcomes(ob, shared=True, derived=False)
    remembered = _outcomes(ob, shared=True)
    assert [o[1] for o in remembered].count("counterexample") == 8
    assert determined(remembered) == determined(without)
    assert [o for o in remembered if o[0]["num_experts"] == 8] == [o for o in without if o[0]["num_experts"] == 8]

    def decided():
        with fresh_z3_context():
            r = prove_obligation(ob, Options())
        return r.verdict, r.counterexample, r.message, r.assumptions_used, r.density

    with_memo = decided()
    real_init = SharedInputs.__init__

    def no_derived(self):
        real_init(self)
        self.derived = None

    monkeypatch.setattr(SharedInputs, "__init__", no_derived)
    assert decided() == with_memo


def test_remembered_extrema_give_the_term_and_record_of_new_ones():
    """``max_of``/``min_of`` of a shared batch with a memo (``SharedInputs.derived``):
    in a later case the same term and the same extremum record (``Trace.extrema``) as a maximum
    made anew; a batch whose length may be 0 gets its nonzero check recorded at every call, and a
    batch whose length object moved is computed again."""
    from capproof.arith import Padded, max_of, min_of

    with fresh_z3_context():
        n = SymInt.var("n")
        # the padding never wins (fill 0 <= lo for the maximum, 9 >= hi for the minimum); the batch
        # must still be nonempty (max(()) raises on the batch alone): one check each
        xs = Padded(tuple(SymInt.var(f"d[{i}]") for i in range(5)), n, 0, 1, 8)
        ys = Padded(tuple(SymInt.var(f"e[{i}]") for i in range(4)), n, 9, 1, 8)
        memo: dict = {}
        for _ in range(2):
            with tracing() as trace:
                trace.derived = memo
                m, k = max_of(xs), min_of(ys)
            with tracing() as fresh:
                fm, fk = max_of(xs), min_of(ys)
            assert m.term.eq(fm.term) and k.term.eq(fk.term)
            assert set(trace.extrema) == {m.term.get_id(), k.term.get_id()}
            for _key, record in trace.extrema.items():
                [(_, new)] = [(i, r) for i, r in fresh.extrema.items() if r[1].eq(record[1])]
                assert record[0] == new[0] and record[3].eq(new[3])
                assert all(a.eq(b) for a, b in zip(record[2], new[2]))
            assert [str(d) for d, _ in trace.divisors] == [str(d) for d, _ in fresh.divisors] == ["n", "n"]
        assert set(memo) == {("max", id(xs)), ("min", id(ys))}
        zs = Padded(tuple(SymInt.var(f"f[{i}]") for i in range(3)), n, 5, 1, 8)  # fill 5 > lo 1: a check
        made = []
        for _ in range(2):
            with tracing() as trace:
                trace.derived = memo
                made.append(max_of(zs))
            assert [str(d) for d, _ in trace.divisors] == ["n"]
        assert made[0] is made[1] and len(memo) == 3
        xs.length = SymInt.var("m")
        with tracing() as trace:
            trace.derived = memo
            moved = max_of(xs)
        assert moved is not m and memo[("max", id(xs))][3][0] is xs.length  # made again (the same term here:
        assert moved.term.eq(m.term)  # the padding never wins, so the maximum does not read the length)


@pytest.mark.slow  # 1.5-2.5 s; the remembered-extrema test and the slot-mapping cases stay fast
def test_padded_decode_cases_decide_the_same_with_remembered_maxima():
    """The 7 cases of ``padded_decode_rows_fit_without_uniform_split`` take the maximum of the same
    64-request batch: the same kind, core, counterexample point and values case by case with the
    maximum remembered across cases as without."""
    ob = _load(os.path.join(ROOT, "spec", "vllm_0_33_today.py"), "padded_decode_rows_fit_without_uniform_split")
    without = _outcomes(ob, shared=True, derived=False)
    remembered = _outcomes(ob, shared=True)
    assert "counterexample" in [o[1] for o in remembered]
    assert remembered == without


def test_remembered_totals_give_the_term_of_new_ones():
    """``total`` of a shared batch of symbolic entries with a memo (``SharedInputs.derived``):
    the term a new total gives, in every case; a batch of ints is not remembered
    there (its own ``Padded.remember`` holds it), and a moved length is summed anew."""
    from capproof.arith import Padded, total

    with fresh_z3_context():
        n = SymInt.var("n")
        qs = Padded(tuple(SymInt.var(f"q[{i}]") for i in range(5)), n, 0, 1, 9)
        filled = Padded(tuple(SymInt.var(f"r[{i}]") for i in range(3)), n, 4, 1, 9)  # padding 4: If per entry
        memo: dict = {}
        made = []
        for _ in range(2):
            with tracing() as trace:
                trace.derived = memo
                made.append((total(qs), total(filled), total(Padded((1, 2, 0), 2, 0, 0, 9))))
            with tracing():
                again = (total(qs), total(filled))
            assert all(a.term.eq(b.term) for a, b in zip(made[-1], again)) and made[-1][2] == 3
            assert not trace.lemmas and not trace.divisors
        assert made[0][0] is made[1][0] and made[0][1] is made[1][1]
        assert set(memo) == {("total", id(qs)), ("total", id(filled))}
        filled.length = SymInt.var("m")
        with tracing() as trace:
            trace.derived = memo
            moved = total(filled)
        assert moved is not made[0][1] and not moved.term.eq(made[0][1].term)
