"""Symbolic batches and routings: Vector parameters, aggregates, lemmas and trigger witnesses."""

from __future__ import annotations

import z3
from conftest import assert_counterexample, assert_proved, prove
from hypothesis import given, settings
from hypothesis import strategies as st

from capproof import Options, Verdict
from capproof.arith import count, max_of, min_of, prefix_sums, round_up, round_up_lemma, total
from capproof.loader import load_file
from capproof.prover import concrete_args, prove_obligation, replay
from capproof.symbolic import SymInt, division_lemma, py_floordiv, to_z3_int, tracing

HEADER = (
    "from capproof import Range, Choice, Vector, obligation, at_most, less_than, equal, claim, "
    "total, max_of, prefix_sums, round_up, all_of\n"
)


def decide(path, name=None, **options):
    items = load_file(path)
    assert not hasattr(items, "message"), items
    ob = items[0] if name is None else next(i for i in items if i.name == name)
    return ob, prove_obligation(ob, Options(**options))


# --- lemmas are valid: an invalid one would make proofs unsound -------------------------------


def _valid(formula) -> bool:
    s = z3.Solver()
    s.add(z3.Not(formula))
    return s.check() == z3.unsat


def test_division_lemma_is_valid_for_every_nonzero_divisor():
    a, b = z3.Ints("a b")
    q = py_floordiv(a, SymInt(b))
    assert _valid(z3.Implies(b != 0, division_lemma(a, b, q)))


def test_division_lemma_is_valid_for_constant_divisors():
    a = z3.Int("a")
    for b in (-7, -1, 1, 2, 3, 16, 64, 1000):
        assert _valid(division_lemma(a, z3.IntVal(b), py_floordiv(a, b))), b
        assert _valid(division_lemma(a, b, py_floordiv(a, b))), b
        with tracing() as trace:  # the lemma the prover is given is the constant-divisor form
            q = py_floordiv(a, b)
        assert len(trace.lemmas) == 1 and _valid(trace.lemmas[0]), b
        bb = z3.Int("bb")  # and it says what the four-implication form says at that divisor
        assert _valid(z3.Implies(bb == b, trace.lemmas[0] == division_lemma(a, bb, q))), b


def test_round_up_lemma_is_valid():
    x = z3.Int("x")
    for y in (1, 2, 3, 4, 16, 64, 128, 1000):
        r = round_up(SymInt(x), y)
        assert _valid(round_up_lemma(x, y, to_z3_int(r))), y


def test_lemmas_are_recorded_only_while_tracing():
    x = SymInt.var("x")
    with tracing() as trace:
        round_up(x, 16)
    assert len(trace.lemmas) == 2  # the floor division inside, and round_up's own
    round_up(x, 16)  # no active trace: nothing to record, nothing raised


# --- aggregates agree on ints and on Z3 terms -------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=12))
def test_aggregates_agree_symbolic_and_concrete(values):
    names = [z3.Int(f"v{i}") for i in range(len(values))]
    syms = [SymInt(n) for n in names]
    model = [n == v for n, v in zip(names, values)]

    def ev(term):
        s = z3.Solver()
        s.add(*model)
        assert s.check() == z3.sat
        return s.model().eval(to_z3_int(term), model_completion=True).as_long()

    assert ev(total(syms)) == total(values) == sum(values)
    assert ev(max_of(syms)) == max_of(values) == max(values)
    assert ev(min_of(syms)) == min_of(values) == min(values)
    assert [ev(p) for p in prefix_sums(syms)] == prefix_sums(values)
    assert ev(count(v > 0 for v in syms)) == count(v > 0 for v in values) == sum(v > 0 for v in values)


def test_prefix_sums_are_query_start_loc():
    # reference §4 example: decode_lens [3, 1, 4] -> query_start_loc [0, 3, 4, 8]
    assert prefix_sums([3, 1, 4]) == [0, 3, 4, 8]


# --- Vector parameters ------------------------------------------------------------------------


def test_vector_with_case_split_length_gives_smallest_batch(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"num_reqs": Choice(1, 2, 3, 4), "mnbt": Range(1, 64),
                    "decode_lens": Vector(4, Range(1, 4), length="num_reqs")},
            assumptions={"scheduled tokens fit the budget": lambda decode_lens, mnbt: total(decode_lens) <= mnbt},
            expect="counterexample")
def padded_rows_fit(num_reqs, mnbt, decode_lens):
    return at_most(padded=num_reqs * max_of(decode_lens), mnbt=mnbt)
"""
    )
    ob, r = decide(path)
    assert_counterexample(r, padded=4, mnbt=3)
    assert r.counterexample.params == {"num_reqs": 2, "mnbt": 3, "decode_lens": [1, 2]}
    holds, values, failed = replay(ob, r.counterexample.params)
    assert (holds, values, failed) == (False, {"padded": 4, "mnbt": 3}, [])


def test_vector_with_symbolic_length_pads_with_fill(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"num_reqs": Range(0, 6), "seq_lens": Vector(6, Range(1, 100), length="num_reqs")},
            expect="counterexample")
def tokens_fit(num_reqs, seq_lens):
    return at_most(tokens=total(seq_lens), capacity=150)
"""
    )
    ob, r = decide(path)
    assert_counterexample(r, tokens=151)
    params = r.counterexample.params
    assert params["num_reqs"] == 2 and len(params["seq_lens"]) == 2 and sum(params["seq_lens"]) == 151
    assert concrete_args(ob, params)["seq_lens"] == (*params["seq_lens"], 0, 0, 0, 0)


def test_vector_proof_names_the_routing_fact(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"numel": Range(1, 4096), "num_experts": Choice(8, 64), "block_size": Choice(16),
                    "counts": Vector(64, Range(0, 4096), length="num_experts")},
            assumptions={"every routed id is counted once": lambda counts, numel: total(counts) == numel,
                         "unused fact": lambda numel: numel >= 1})
def post_pad_fits(numel, num_experts, block_size, counts):
    return at_most(post_pad=total(round_up(c, block_size) for c in counts),
                   capacity=numel + num_experts * (block_size - 1))
"""
    )
    _, r = decide(path)
    assert_proved(r)
    assert "every routed id is counted once" in r.assumptions_used
    assert "unused fact" not in r.assumptions_used


def test_bad_vector_declarations_are_errors_not_crashes(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"n": Range(0, 8), "xs": Vector(4, Range(0, 1), length="n")})
def length_beyond_size(n, xs):
    return total(xs) >= 0

@obligation(domain={"xs": Vector(4, Range(0, 1), length="missing")})
def length_not_a_parameter(xs):
    return total(xs) >= 0

@obligation(domain={"xs": Vector(0, Range(0, 1))})
def empty_vector(xs):
    return total(xs) >= 0

@obligation(domain={"xs": Vector(3, Choice(1, 2))})
def entries_not_a_range(xs):
    return total(xs) >= 0
"""
    )
    messages = {}
    for ob in load_file(path):
        r = prove_obligation(ob, Options())
        assert r.verdict is Verdict.ERROR, (ob.name, r.message)
        messages[ob.name] = r.message
    assert "outside 0..4" in messages["length_beyond_size"]
    assert "not a parameter" in messages["length_not_a_parameter"]
    assert "size must be" in messages["empty_vector"]
    assert "must be a Range" in messages["entries_not_a_range"]


def test_pinning_a_vector_is_a_clear_error(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"n": Range(0, 4), "xs": Vector(4, Range(0, 1), length="n")})
def fits(n, xs):
    return total(xs) <= 4
"""
    )
    ob = load_file(path)[0]
    r = prove_obligation(ob, Options(pins={"xs": 1}))
    assert r.verdict is Verdict.ERROR and "pin its length (n)" in r.message


def test_vector_entries_sliced_by_a_symbolic_length_split_into_one_path_per_length(spec_file):
    """``xs[:n]`` needs ``n`` as a Python int: with few lengths, one path per length (exact);
    with more than a case split takes, an error naming it."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"n": Range(0, 4), "xs": Vector(4, Range(0, 1), length="n")})
def slices(n, xs):
    return total(xs[:n]) <= 3

@obligation(domain={"n": Range(0, 100), "xs": Vector(100, Range(0, 1), length="n")})
def wide(n, xs):
    return total(xs[:n]) <= 100
"""
    )
    few, many = load_file(path)
    r = prove_obligation(few, Options())
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.counterexample.params["n"] == 4, r.message
    r = prove_obligation(many, Options())
    assert r.verdict is Verdict.ERROR and "concrete" in r.message


def test_moe_1024_experts_stays_practical():
    """1024 per-expert counts: proved (the division lemmas make it a few seconds per case)."""
    r = prove(
        "spec/moe_align.py", "vllm_sorted_ids_fit_every_routing", num_experts=1024, block_size_m=64, pad_sorted_ids=1
    )
    assert_proved(r)
    assert r.assumptions_used[0] == "every routed id is counted once"


# --- trigger witnesses ------------------------------------------------------------------------


def test_witness_holds_config_and_moves_the_batch(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"width": Range(1, 100), "num_reqs": Range(1, 8), "padded": Range(1, 16)},
            assumptions={"padding only adds": lambda num_reqs, padded: padded >= num_reqs},
            witnesses={"raises": lambda num_reqs, padded: padded > num_reqs,
                       "never": lambda num_reqs: num_reqs > 99},
            expect="counterexample")
def widths_match(width, num_reqs, padded):
    return equal(W_buf=width - (width % 2), W_bt=width)
"""
    )
    _, r = decide(path)
    assert r.counterexample.params == {"width": 1, "num_reqs": 1, "padded": 1}
    raises, never = r.witnesses
    assert raises.found and raises.params == {"width": 1, "num_reqs": 1, "padded": 2}
    assert raises.values == {"W_buf": 0, "W_bt": 1}
    assert not never.found and "no point" in never.message


def test_bad_witness_declarations_are_errors(spec_file):
    path = spec_file(
        HEADER
        + """
@obligation(domain={"x": Range(0, 4)}, witnesses={"w": lambda y: y > 0})
def uses_unknown(x):
    return x >= 0
"""
    )
    r = prove_obligation(load_file(path)[0], Options())
    assert r.verdict is Verdict.ERROR and "witness 'w' uses ['y']" in r.message


def test_moe_extra_bucket_reproduces_the_wna16_report_numbers():
    """vllm-moe-wna16-sorted-ids-oob reported a 129-entry sorted_token_ids with
    num_tokens_post_pad = 144 (BLOCK_SIZE_M 16) and could not explain it. One bucket more than the
    sizing assumes (E = 8, 9 routed ids in 9 buckets, e.g. a filtered id counted) gives exactly it."""
    r = prove(
        "spec/moe_align.py",
        "vllm_sizing_with_filtered_ids_counted",
        num_experts=8,
        block_size_m=16,
        numel=9,
        pad_sorted_ids=0,
        num_buckets=9,
    )
    assert_counterexample(r, num_tokens_post_pad=144, capacity=129)


def test_witness_ranges_over_the_finite_parameters_it_takes(spec_file):
    """A witness condition on a case-split parameter, or on a vector whose length is case-split,
    searches the other cases (the counterexample's case may have no such point)."""
    path = spec_file(
        HEADER
        + """
@obligation(domain={"k": Choice(1, 2), "x": Range(0, 10)}, expect="counterexample",
            witnesses={"k is 2": lambda k: k == 2})
def witness_finite(k, x):
    return at_most(demand=x, capacity=5)

@obligation(domain={"n": Choice(1, 2), "xs": Vector(2, Range(0, 10), length="n")}, expect="counterexample",
            witnesses={"two requests": lambda xs: xs[1] >= 1})
def witness_vector_with_choice_length(n, xs):
    return at_most(demand=xs[0], capacity=5)
"""
    )
    first, second = (prove_obligation(ob, Options()) for ob in load_file(path))
    assert first.counterexample.params == {"k": 1, "x": 6}
    (w,) = first.witnesses
    assert w.found and w.params == {"k": 2, "x": 6}
    assert second.counterexample.params == {"n": 1, "xs": [6]}
    (w,) = second.witnesses
    assert w.found and w.params == {"n": 2, "xs": [6, 1]}


def test_moe_local_sizing_with_global_counts_also_gives_129_vs_144():
    """Fact (b) broken under EP: DeepEP v2 sizing for 8 local experts, 9 routes counted over 16
    global buckets: num_tokens_post_pad 144 against 129 entries, the wna16 report's numbers again."""
    r = prove(
        "spec/moe_align.py", "local_sizing_with_global_counts", local_num_experts=8, ep_size=2, block_size_m=16, numel=9
    )
    assert_counterexample(r, num_tokens_post_pad=144, capacity=129)
    assert_proved(
        prove("spec/moe_align.py", "deepep_v2_sorted_ids_fit_local_routing", local_num_experts=8, block_size_m=16)
    )


def test_lemmas_built_through_the_c_api_are_the_python_api_terms():
    """The fast lemma builders give the very ASTs ``z3.And``/``z3.Implies``/``>=`` give, so the
    solver sees the same queries as before they existed."""
    a, q, r = z3.Ints("a q r")
    for b in (1, 16, 1000):
        plain = z3.And(z3.Implies(a >= 0, z3.And(q >= 0, q <= a)), z3.Implies(a <= 0, z3.And(q >= a, q <= 0)))
        assert division_lemma(a, b, q).eq(plain)
        assert round_up_lemma(a, b, r).eq(z3.And(r >= a, r <= a + (b - 1), z3.Implies(a >= 0, r <= a * b)))
    for b in (-1, -7):
        plain = z3.And(z3.Implies(a >= 0, z3.And(q >= -a, q <= 0)), z3.Implies(a <= 0, z3.And(q >= 0, q <= -a)))
        assert division_lemma(a, b, q).eq(plain)


def test_the_witness_search_reuses_the_cases_decided(spec_file, monkeypatch):
    """The trigger witnesses' search takes the cases the verdict decided (kept, by their fixed
    values) instead of building them again: one build per case in all, the same witnesses."""
    import capproof.prover as prover

    path = spec_file(
        HEADER
        + """
@obligation(domain={"k": Choice(1, 2), "x": Range(0, 10)}, expect="counterexample",
            witnesses={"k is 2": lambda k: k == 2, "x is 7": lambda x: x == 7})
def witness_finite(k, x):
    return at_most(demand=x, capacity=5)
"""
    )
    built = []
    original = prover.build_paths
    monkeypatch.setattr(
        prover, "build_paths", lambda ob, fixed, *a: built.append(dict(fixed)) or original(ob, fixed, *a)
    )
    (ob,) = load_file(path)
    r = prove_obligation(ob, Options())
    assert built == [{"k": 1}, {"k": 2}]  # the two cases, each built once
    k2, x7 = r.witnesses
    assert k2.found and k2.params == {"k": 2, "x": 6} and x7.found and x7.params == {"k": 1, "x": 7}
