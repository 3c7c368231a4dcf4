"""The aggregate abstraction (capproof.aggregate): exact facts, realisation, where it applies,
and verdicts that agree with the bounded encoding."""

from __future__ import annotations

import itertools

import pytest
import z3

from capproof import Options, Verdict
from capproof.aggregate import aggregate_facts, realise
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay

# --- the facts are exact: exactly the aggregates some batch has -------------------------------


@pytest.mark.parametrize("lo, hi", [(0, 3), (1, 4), (2, 2)])
def test_aggregate_facts_are_exactly_the_realisable_aggregates(lo, hi):
    """By enumeration: for n <= 4 entries in lo..hi, the (n, T, M, m) the facts admit are the
    aggregates of some batch, and every batch's aggregates satisfy the facts (validity both ways)."""
    n_, T_, M_, m_ = z3.Ints("n T M m")
    for n in range(1, 5):
        batches = {(sum(b), max(b), min(b)) for b in itertools.product(range(lo, hi + 1), repeat=n)}
        facts = z3.substitute(aggregate_facts(n_, T_, M_, m_, lo, hi, True), (n_, z3.IntVal(n)))
        admitted = set()
        for T in range(n * lo - 1, n * hi + 2):
            for M in range(lo - 1, hi + 2):
                for m in range(lo - 1, hi + 2):
                    if z3.is_true(
                        z3.simplify(z3.substitute(facts, (T_, z3.IntVal(T)), (M_, z3.IntVal(M)), (m_, z3.IntVal(m))))
                    ):
                        admitted.add((T, M, m))
        assert admitted == batches, n
        totals = {t for t, _, _ in batches}
        only_total = z3.substitute(aggregate_facts(n_, T_, M_, m_, lo, hi, False), (n_, z3.IntVal(n)))
        assert {
            T
            for T in range(n * lo - 1, n * hi + 2)
            if z3.is_true(z3.simplify(z3.substitute(only_total, (T_, z3.IntVal(T)))))
        } == totals


def test_aggregate_facts_hold_for_every_batch_size():
    """Z3: any batch (here its aggregates as they relate at n and n+1 entries) keeps the facts:
    adding an entry x in lo..hi to a batch satisfying them gives one satisfying them (induction)."""
    n, T, M, m, x = z3.Ints("n T M m x")
    lo, hi = 1, 1000
    step = z3.Implies(
        z3.And(n >= 1, aggregate_facts(n, T, M, m, lo, hi, True), lo <= x, x <= hi),
        aggregate_facts(n + 1, T + x, z3.If(x > M, x, M), z3.If(x < m, x, m), lo, hi, True),
    )
    s = z3.Solver()
    s.add(z3.Not(step))
    assert s.check() == z3.unsat
    base = z3.Implies(z3.And(lo <= x, x <= hi), aggregate_facts(z3.IntVal(1), x, x, x, lo, hi, True))
    s = z3.Solver()
    s.add(z3.Not(base))
    assert s.check() == z3.unsat


@pytest.mark.parametrize("n, T, M, m", [(1, 5, 5, 5), (2, 7, 5, 2), (5, 17, 6, 1), (1000, 4000, 6, 1), (3, 3, 1, 1)])
def test_realise_builds_a_batch_with_these_aggregates(n, T, M, m):
    b = realise(n, T, M, m, 1, 8)
    assert (len(b), sum(b), max(b), min(b)) == (n, T, M, m) and b == sorted(b)
    t = realise(n, T, None, None, 1, 8)
    assert (len(t), sum(t)) == (n, T) and all(1 <= v <= 8 for v in t)


def test_realise_refuses_unrealisable_aggregates():
    with pytest.raises(ValueError):
        realise(3, 20, 6, 1, 1, 8)  # at most 1 + 6 + 6
    with pytest.raises(ValueError):
        realise(1, 4, 5, 4, 1, 8)


# --- where it applies, and what it refuses ----------------------------------------------------

SPEC = """
from capproof import Range, Choice, obligation, at_most, all_of, any_of, implies
from capproof.arith import total, max_of, min_of, count
from capproof.domain import Vector

D = {"n": Range(1, SIZE), "cap": Range(1, 10**6), "k": Choice(1, 3), "lens": Vector(SIZE, Range(1, 8), length="n")}
FACTS = {"per request": lambda lens, k: all_of(*(d <= 1 + k for d in lens)),
         "budget": lambda lens, cap: total(lens) <= cap}

@obligation(domain=D, assumptions=FACTS)
def tokens_fit(n, cap, k, lens):
    return at_most(demand=total(lens), capacity=cap)

@obligation(domain=D, assumptions=FACTS)
def rows_fit(n, cap, k, lens):
    return at_most(demand=max_of(lens) * 0 + n * (1 + k), capacity=cap + n * (1 + k))

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def padded_rows_fit(n, cap, k, lens):
    return at_most(demand=max_of(lens) + n, capacity=cap)

@obligation(domain=D, assumptions=FACTS)
def by_enumerate(n, cap, k, lens):
    return all_of(*(implies(i < n, d <= 1 + k) for i, d in enumerate(lens)))

@obligation(domain=D, assumptions=FACTS)
def by_index(n, cap, k, lens):
    return lens[0] <= 1 + k

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def not_convex(n, cap, k, lens):
    return all_of(*(d != 2 for d in lens))

@obligation(domain=D, assumptions=FACTS)
def some_request(n, cap, k, lens):
    return any_of(*(d <= 1 + k for d in lens))

@obligation(domain=D, assumptions=FACTS)
def counted(n, cap, k, lens):
    return count(d >= 1 for d in lens) >= 0

@obligation(domain=D, assumptions=FACTS)
def summed_map(n, cap, k, lens):
    return total(d * 2 for d in lens) <= 2 * cap

@obligation(domain=D, assumptions=FACTS)
def builtin_sum(n, cap, k, lens):
    return sum(d for d in lens) <= cap

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def not_monotone(n, cap, k, lens):
    return total(d % 3 for d in lens) <= n

@obligation(domain=D, assumptions=FACTS)
def filtered(n, cap, k, lens):
    return total(d for d in lens if d > 2) <= cap

@obligation(domain=D, assumptions=FACTS)
def mapped_over_a_parameter(n, cap, k, lens):  # the per-entry function closes over a symbolic n
    return total(d + n - n for d in lens) <= cap

@obligation(domain=D, assumptions=FACTS)
def nested_totals(n, cap, k, lens):  # two entries at once: never one representative for both
    return all_of(*(total(d - e for d in lens) <= 0 for e in lens))
"""


@pytest.fixture
def obs(spec_file):
    def load(size):
        return {it.name: it for it in load_file(spec_file(SPEC.replace("SIZE", str(size)), f"agg_spec_{size}.py"))}

    return load


def test_aggregate_proofs_hold_for_every_batch_size_and_agree_with_the_bounded_encoding(obs):
    small = obs(6)
    for name in ("tokens_fit", "rows_fit"):
        agg = prove_obligation(small[name], Options())
        bounded = prove_obligation(small[name], Options(aggregate=False))
        assert agg.verdict is bounded.verdict is Verdict.PROVED, (agg.message, bounded.message)
        assert agg.encoding == "all batch sizes" and bounded.encoding == "batches <= 6"
    big = obs(4096)["tokens_fit"]  # the query does not grow with the batch
    r = prove_obligation(big, Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.message
    assert "per request" not in r.assumptions_used and "budget" in r.assumptions_used


def test_a_per_entry_function_closing_over_a_parameter_is_decided_on_the_aggregates(obs):
    """The purity check reads what the per-entry function reaches: a symbolic parameter is pure,
    and looking at it must not count as a misuse of it (vLLM's FlashInfer page total,
    ``total(cdiv(s, block_size) for s in seq_lens)``, fell to the bounded encoding at 4,096 entries)."""
    r = prove_obligation(obs(4096)["mapped_over_a_parameter"], Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note


def test_small_vectors_keep_the_bounded_counterexample(obs):
    ob = obs(6)["padded_rows_fit"]
    r = prove_obligation(ob, Options())
    b = prove_obligation(ob, Options(aggregate=False))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "batches <= 6"
    assert r.counterexample.params == b.counterexample.params


def test_large_vectors_get_a_realised_counterexample_that_replays(obs):
    ob = obs(4096)["padded_rows_fit"]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "all batch sizes", r.message
    params = r.counterexample.params
    holds, values, failed = replay(ob, params)
    assert not holds and not failed and values == r.counterexample.values
    assert len(params["lens"]) == params["n"]


@pytest.mark.parametrize(
    "name, why",
    [
        ("by_enumerate", "iterated other than by a generator expression"),
        ("by_index", "indexing"),
        ("not_convex", "not convex"),
        ("some_request", "other than through"),
        ("counted", "consumed by a call other than capproof's total()"),
        ("builtin_sum", "consumed by a call other than capproof's total()"),
        ("not_monotone", "not monotone in the entry"),
        pytest.param("filtered", "branch on symbolic condition", marks=pytest.mark.slow),  # ~20 s: the bounded encoding
        ("nested_totals", "aggregate abstraction not applicable"),
    ],
)
def test_the_abstraction_refuses_what_it_cannot_capture(obs, name, why):
    ob = obs(6)[name]
    r = prove_obligation(ob, Options())
    assert r.encoding == "batches <= 6" and why in r.encoding_note, r.encoding_note
    assert r.verdict is prove_obligation(ob, Options(aggregate=False)).verdict


def test_uniform_batch_as_min_equals_max_with_a_range_length_is_decided(spec_file):
    """uniformity written `min_of(v) == max_of(v)` over a `Range(1, 256)` batch length
    came back unknown on the bounded encoding; on the aggregates it is one shared value
    (min = max forces total = n * max), and the 2-request counterexample is found and replays."""
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, Choice, obligation, at_most
from capproof.arith import total, max_of, min_of
from capproof.domain import Vector

@obligation(domain={"mnbt": Range(1, 2**16), "k": Choice(1, 3), "num_reqs": Range(1, 256),
                    "decode_lens": Vector(256, Range(1, 8), length="num_reqs")},
            assumptions={"uniform": lambda decode_lens: min_of(decode_lens) == max_of(decode_lens),
                         "budget": lambda decode_lens, mnbt: total(decode_lens) <= mnbt,
                         "decode": lambda decode_lens, k: max_of(decode_lens) <= 1 + k},
            expect="counterexample")
def rows_fit(mnbt, k, num_reqs, decode_lens):
    return at_most(rows=num_reqs * max_of(decode_lens), capacity=mnbt - 1)
""",
            "uniform_spec.py",
        )
    )
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "all batch sizes", r.message
    p = r.counterexample.params
    assert p["decode_lens"] == [p["decode_lens"][0]] * p["num_reqs"]
    holds, _, failed = replay(ob, p)
    assert not holds and not failed


def test_unknown_says_what_made_it_hard(spec_file):
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, obligation

@obligation(domain={"x": Range(1, 10**9), "y": Range(1, 10**9), "z": Range(1, 10**9)}, rlimit=200000)
def cubes(x, y, z):
    return x * x * x + y * y * y != z * z * z
""",
            "hard_spec.py",
        )
    )
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.UNKNOWN
    assert "rlimit spent" in r.message and "nonlinear terms" in r.message and "try:" in r.message


def test_pairs_of_entries_are_not_collapsed_into_one(spec_file):
    """`a - b <= 3 for a in v for b in v` is about two entries: one representative for both
    would make it `0 <= 3` (always true) and 'prove' a false spread bound."""
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, obligation, all_of, implies
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 6), "v": Vector(6, Range(1, 8), length="n")}, expect="counterexample")
def spread(n, v):  # masked by the length: the padding entries are not requests (S3)
    return all_of(*(implies(all_of(i < n, j < n), a - b <= 3) for i, a in enumerate(v) for j, b in enumerate(v)))
""",
            "pairs_spec.py",
        )
    )
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "batches <= 6", r.encoding_note
    assert "aggregate abstraction not applicable" in r.encoding_note  # pairs (or enumerate): never one representative


def test_symbolic_divisors_are_left_to_the_bounded_encoding(spec_file):
    (ob,) = load_file(
        spec_file(
            """
from capproof import Range, obligation, at_most
from capproof.arith import total
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 6), "b": Range(0, 4), "v": Vector(6, Range(1, 8), length="n")})
def per_block(n, b, v):
    return at_most(d=total(v) // b, c=48)
""",
            "div_spec.py",
        )
    )
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.ERROR and "can be zero" in r.message
    assert "symbolic divisor" in r.encoding_note


# --- mapped totals: total(f(d) for d in batch) with f monotone in the entry ---------------------

PAGES = """
from capproof import Range, Choice, obligation, at_most, all_of, cdiv
from capproof.arith import total
from capproof.domain import Vector

D = {"max_num_reqs": Range(1, 2**12), "max_model_len": Range(1, 2**21), "block_size": Choice(16, 64),
     "num_reqs": Range(1, SIZE), "seq_lens": Vector(SIZE, Range(0, 2**21), length="num_reqs")}
FACTS = {"num_reqs <= max_num_reqs": lambda num_reqs, max_num_reqs: num_reqs <= max_num_reqs,
         "each fits": lambda seq_lens, max_model_len: all_of(*(s <= max_model_len for s in seq_lens))}

@obligation(domain=D, assumptions=FACTS)
def pages_fit(max_num_reqs, max_model_len, block_size, num_reqs, seq_lens):
    return at_most(pages=total(cdiv(s, block_size) for s in seq_lens), capacity=max_num_reqs * cdiv(max_model_len, block_size))

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def pages_fit_one_short(max_num_reqs, max_model_len, block_size, num_reqs, seq_lens):
    return at_most(pages=total(cdiv(s, block_size) for s in seq_lens), capacity=max_num_reqs * (max_model_len // block_size))

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def pages_fit_per_request_budget(max_num_reqs, max_model_len, block_size, num_reqs, seq_lens):
    return at_most(pages=total(cdiv(s, block_size) for s in seq_lens), capacity=num_reqs + 3)
"""


@pytest.fixture
def pages(spec_file):
    def load(size):
        return {it.name: it for it in load_file(spec_file(PAGES.replace("SIZE", str(size)), f"pages_spec_{size}.py"))}

    return load


def test_mapped_total_proves_for_every_batch_size_and_agrees_with_the_bounded_encoding(obs, pages):
    """FlashInfer's page list (vLLM 0.33.0 flashinfer.py:1527-1536, 1708-1710): the sum of the
    per-request cdiv(seq_len, page_size) fits max_num_reqs * cdiv(max_model_len, block_size), for
    every batch size; at 2 entries the bounded encoding agrees."""
    for name in ("summed_map",):
        r = prove_obligation(obs(4096)[name], Options())
        assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note
    small, big = pages(2), pages(4096)
    assert prove_obligation(small["pages_fit"], Options(aggregate=False)).verdict is Verdict.PROVED
    r = prove_obligation(big["pages_fit"], Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note
    assert {"num_reqs <= max_num_reqs", "each fits"} <= set(r.assumptions_used)  # (the core may add domain bounds)


@pytest.mark.parametrize("name", ["pages_fit_one_short", "pages_fit_per_request_budget"])
def test_mapped_total_counterexamples_are_realised_and_replay(pages, name):
    ob = pages(4096)[name]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "all batch sizes", r.encoding_note
    p = r.counterexample.params
    holds, values, failed = replay(ob, p)
    assert not holds and not failed and values == r.counterexample.values
    assert len(p["seq_lens"]) == p["num_reqs"]
    # the bounded encoding at 4 entries finds one too (the shapes need at most 2 requests)
    assert prove_obligation(pages(4)[name], Options(aggregate=False, density="off")).verdict is Verdict.COUNTEREXAMPLE


@pytest.mark.slow  # a sweep over batches; test_mapped_total_proves_for_every_batch_size_and_agrees_with_the_bounded_encoding stays fast
def test_mapped_facts_hold_for_every_batch():
    """Soundness of the mapped total's facts, by enumeration: every batch of 1..4 entries in 0..9
    satisfies them for f = cdiv(., 3) (rising) and f = 9 - x (falling)."""
    from capproof.aggregate import mapped_facts

    n_, T_, a_, b_ = z3.Ints("n T ymax ymin")
    facts = mapped_facts(n_, T_, a_, b_)
    for f in (lambda x: -(-x // 3), lambda x: 9 - x):
        for n in range(1, 5):
            for batch in itertools.product(range(10), repeat=n):
                ys = [f(x) for x in batch]
                y_at_max, y_at_min = f(max(batch)), f(min(batch))
                ymax, ymin = max(y_at_max, y_at_min), min(y_at_max, y_at_min)
                assert ymax == max(ys) and ymin == min(ys)
                val = z3.substitute(
                    facts, (n_, z3.IntVal(n)), (T_, z3.IntVal(sum(ys))), (a_, z3.IntVal(ymax)), (b_, z3.IntVal(ymin))
                )
                assert z3.is_true(z3.simplify(val)), (batch, ys)


def test_monotone_bound_lemmas_are_valid_for_a_monotone_term():
    """The lemmas the mapped total adds (f(max) <= f(u) when max <= u, for a rising f on lo..hi)
    are valid, checked by Z3 for vLLM's page count f = cdiv(., 16) on 0..2**21; and the
    monotonicity check refuses a term that is not monotone (d % 3)."""
    from capproof.aggregate import _monotone

    x, u, M = z3.Ints("x u M")
    f = -((-x) / 16)
    assert _monotone(f, x, 0, 2**21, []) is True
    assert _monotone(9 - x, x, 0, 9, []) is False
    assert _monotone(x % 3, x, 0, 9, []) is None
    s = z3.Solver()
    lemma = z3.Implies(z3.And(0 <= u, u <= 2**21, 0 <= M, M <= u), z3.substitute(f, (x, M)) <= z3.substitute(f, (x, u)))
    s.add(z3.Not(lemma))
    assert s.check() == z3.unsat


# --- affine envelope and common residue of a mapped total (MoE align: sum_e round_up(cnt_e, B)) --


@pytest.mark.parametrize("block", [1, 3, 16])
def test_affine_envelope_is_exact_and_valid_for_round_up(block):
    """Each ``(a, c_lo, c_hi)`` bounds ``round_up(x, B)`` on 0..200 from both sides and is attained
    (exact), by enumeration; the slopes 1 (``numel + E*(B-1)``) and ``B`` (``numel*B``) are found."""
    from capproof.aggregate import affine_envelope

    x = z3.Int("x")
    f = ((x + block - 1) / block) * block
    envelope = affine_envelope(f, x, 0, 200)

    def ru(v):
        return -(-v // block) * block

    for a, c_lo, c_hi in envelope:
        gaps = [ru(v) - a * v for v in range(201)]
        assert min(gaps) == c_lo and max(gaps) == c_hi, (a, c_lo, c_hi)
    slopes = {a: (c_lo, c_hi) for a, c_lo, c_hi in envelope}
    assert slopes[1][1] == block - 1 and slopes[block][1] == 0


def test_affine_envelope_refuses_a_term_of_another_name():
    from capproof.aggregate import affine_envelope

    x, b = z3.Ints("x b")
    assert affine_envelope(x * b, x, 0, 10) == []


def test_common_residue_of_round_up_and_none_without_one():
    """``round_up(x, 16)`` is always ``0 mod 16``; ``3*x + 2`` is ``2 mod 3``; ``x`` has no residue.
    Summed: ``(sum f - n*r) % g == 0`` on every batch of 1..3 entries in 0..40 (enumeration)."""
    from capproof.aggregate import common_residue

    x = z3.Int("x")
    assert common_residue(((x + 15) / 16) * 16, x, 0, 2**20) == (16, 0)
    assert common_residue(3 * x + 2, x, 0, 50) == (3, 2)
    assert common_residue(x, x, 0, 50) is None
    assert common_residue(x / 2, x, 0, 50) is None
    for n in range(1, 4):
        for batch in itertools.product(range(0, 41, 7), repeat=n):
            assert (sum(-(-v // 16) * 16 for v in batch) - n * 0) % 16 == 0


MOE = """
from capproof import Range, Choice, obligation, at_most
from capproof.arith import total, round_up, select, minimum
from capproof.domain import Vector

D = {"numel": Range(1, 2**20), "num_experts": Choice(8, SIZE), "block_size_m": Choice(16, 64),
     "counts": Vector(SIZE, Range(0, 2**20), length="num_experts")}
ONCE = {"every routed id is counted once": lambda counts, numel: total(counts) == numel}

def capacity(numel, num_experts, block_size):
    cap = numel + num_experts * (block_size - 1)
    return select(numel < num_experts, minimum(numel * block_size, cap), cap)

@obligation(domain=D, assumptions=ONCE)
def padded_fits(numel, num_experts, block_size_m, counts):
    return at_most(post_pad=total(round_up(c, block_size_m) for c in counts),
                   capacity=capacity(numel, num_experts, block_size_m))

@obligation(domain=D, assumptions=ONCE)
def gemm_reads_fit_same_tile(numel, num_experts, block_size_m, counts):
    post_pad = total(round_up(c, block_size_m) for c in counts)
    return at_most(last_read=-(-post_pad // block_size_m) * block_size_m - 1,
                   capacity=capacity(numel, num_experts, block_size_m) - 1)

@obligation(domain=D, assumptions=ONCE, expect="counterexample")
def padded_fits_one_short(numel, num_experts, block_size_m, counts):
    return at_most(post_pad=total(round_up(c, block_size_m) for c in counts),
                   capacity=capacity(numel, num_experts, block_size_m) - 1)
"""


def test_moe_align_padding_is_proved_for_every_routing_and_one_short_is_refuted(spec_file):
    """vLLM 0.33.0's ``sorted_token_ids`` sizing (moe_align_block_size.py:137-143, models/moe_align.py)
    against ``sum_e round_up(cnt_e, B)``: proved on the aggregates for every number of experts (the
    affine envelope and the residue mod B give what the monotone facts alone did not); one entry less
    is a counterexample, realised as a routing and replayed, at 1024 experts; the bounded encoding
    agrees at 8 experts."""
    obs = {it.name: it for it in load_file(spec_file(MOE.replace("SIZE", "1024"), "moe_envelope_1024.py"))}
    r = prove_obligation(obs["padded_fits"], Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note
    # the wna16 GEMM's last read with its tile equal to the align block (vllm-project/vllm#45496):
    # needs the residue (every padded count is a multiple of B), not only the envelope
    r = prove_obligation(obs["gemm_reads_fit_same_tile"], Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note
    r = prove_obligation(obs["padded_fits_one_short"], Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "all batch sizes", r.encoding_note
    holds, values, failed = replay(obs["padded_fits_one_short"], r.counterexample.params)
    assert not holds and not failed and values == r.counterexample.values
    small = {it.name: it for it in load_file(spec_file(MOE.replace("SIZE", "8"), "moe_envelope_8.py"))}
    assert prove_obligation(small["padded_fits"], Options(aggregate=False, density="off")).verdict is Verdict.PROVED
    assert (
        prove_obligation(small["padded_fits_one_short"], Options(aggregate=False, density="off")).verdict
        is Verdict.COUNTEREXAMPLE
    )


def test_an_attempt_on_the_aggregates_leaves_the_callers_z3_context_alone(spec_file):
    """The aggregate/induction attempts run in a Z3 context of their own, and the caller's is
    restored: a term the caller built before stays usable."""
    obs = {it.name: it for it in load_file(spec_file(MOE.replace("SIZE", "8"), "moe_envelope_ctx.py"))}
    x = z3.Int("x")  # creates the caller's main context when none exists yet (the test run alone)
    before = z3.z3._main_ctx
    prove_obligation(obs["padded_fits"], Options(density="off"))
    assert z3.z3._main_ctx is before
    s = z3.Solver()
    s.add(x > 1)
    assert s.check() == z3.sat


def test_shared_facts_decides_each_per_entry_fact_once_with_the_same_verdicts(spec_file, monkeypatch):
    """Within one aggregate attempt the cases share their per-entry term ``round_up(cnt, B)``:
    :func:`capproof.aggregate.shared_facts` decides its envelope (and monotonicity, residue) once
    per distinct ``B``, not once per case, and every verdict, message, core and counterexample is
    the one deciding it in every case gives (engine overhead)."""
    import contextlib

    import capproof.aggregate as agg

    obs = {it.name: it for it in load_file(spec_file(MOE.replace("SIZE", "64"), "moe_shared_facts.py"))}
    real = agg.affine_envelope
    calls: list[tuple] = []

    def counted(f, each, lo, hi):
        calls.append((str(f), lo, hi))
        return real(f, each, lo, hi)

    monkeypatch.setattr(agg, "affine_envelope", counted)

    def run(name):
        calls.clear()
        r = prove_obligation(obs[name], Options(density="off"))
        cex = r.counterexample.params if r.counterexample else None
        return (r.verdict, r.message, r.encoding, r.assumptions_used, cex), list(calls)

    shared = {name: run(name) for name in ("padded_fits", "gemm_reads_fit_same_tile")}
    monkeypatch.setattr(agg, "shared_facts", contextlib.nullcontext)
    alone = {name: run(name) for name in shared}
    for name in shared:
        assert shared[name][0] == alone[name][0], name
        assert shared[name][0][2] == "all batch sizes"
        # 4 cases (num_experts 8/64 x block_size_m 16/64): one envelope per block size when shared
        assert len(alone[name][1]) == 4 and len(shared[name][1]) == 2, (shared[name][1], alone[name][1])
        assert sorted(set(alone[name][1])) == sorted(shared[name][1])


@pytest.mark.parametrize("seed", range(5))
def test_mapped_sum_counts_each_distinct_entry_once_and_equals_the_entrywise_sum(seed):
    import random

    from capproof.aggregate import _mapped_sum

    rng = random.Random(seed)
    x = z3.Int("x")
    f = ((x + 15) / 16) * 16 - 3 * x
    xs = [rng.choice([0, 1, 17, 4096, rng.randrange(2**20)]) for _ in range(rng.randrange(1, 300))]
    evaluated: list[int] = []

    def ev(t):
        evaluated.append(1)
        return z3.simplify(t).as_long()

    assert _mapped_sum(ev, x, f, xs) == sum(-(-v // 16) * 16 - 3 * v for v in xs)
    assert len(evaluated) == len(set(xs))


def test_a_refused_iteration_names_the_models_line_not_capproofs(spec_file):
    """A batch walked by ``arith.fold`` (iterated inside capproof) is refused by the abstraction with
    the line of the model that called ``fold``, not ``capproof/arith.py``'s: the note in proofs/
    must not move when capproof changes."""
    spec = spec_file(
        """
from capproof import Range, obligation, at_most
from capproof.arith import fold
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 4), "v": Vector(4, Range(0, 3), length="n")})
def walked(n, v):
    last = fold(lambda s, i, x: x if i < n else s, 0, v)
    return at_most(last=last, capacity=3)
""",
        "walked_spec.py",
    )
    [ob] = load_file(spec)
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED
    assert "iterated other than" in r.encoding_note and "walked_spec.py:8" in r.encoding_note, r.encoding_note
    assert "capproof/arith.py" not in r.encoding_note


def test_a_pinned_batch_length_is_not_reported_as_every_batch_size(obs):
    """``--set n=3``: the aggregate abstraction then decides batches of 3 requests only, so the
    verdict must not say "every batch size"; unpinned it still does."""
    ob = obs(6)["tokens_fit"]
    free = prove_obligation(ob, Options())
    pinned = prove_obligation(ob, Options(pins={"n": 3}))
    assert free.verdict is pinned.verdict is Verdict.PROVED
    assert "every batch size" in free.message and "pinned" not in free.encoding_note
    assert "every batch size" not in pinned.message, pinned.message
    assert "batches of the pinned length only (n=3)" in pinned.message
    assert "n = 3 (pinned in this run)" in pinned.encoding_note


def test_real_batch_probe_evaluates_each_distinct_entry_once_with_the_same_verdicts(spec_file, monkeypatch):
    """The semantics probe of an inexact abstraction at a real batch (``_probe_real_batch``) pins
    each mapped total to its value on the realised batch, ``f`` evaluated once per distinct entry
    (``_mapped_sum``) instead of once per entry (on FlashInfer's 4,096-request pages the
    entry-wise sums were ~0.7 s of engine time in the runs that probe there): every verdict,
    message, core and counterexample is the entry-wise one."""
    import capproof.aggregate as agg

    obs = {it.name: it for it in load_file(spec_file(MOE.replace("SIZE", "64"), "moe_real_batch.py"))}
    real_probe = agg._probe_real_batch
    probed: list[int] = []

    def counted(case, s, model):
        probed.append(1)
        return real_probe(case, s, model)

    def entrywise(ev, each, f, xs):  # what _probe_real_batch summed before
        return sum(ev(z3.substitute(f, (each, z3.IntVal(x)))) for x in xs)

    monkeypatch.setattr(agg, "_probe_real_batch", counted)

    def run(name):
        r = prove_obligation(obs[name], Options(density="off"))
        cex = r.counterexample.params if r.counterexample else None
        return r.verdict, r.message, r.encoding, r.assumptions_used, cex

    names = ("padded_fits", "gemm_reads_fit_same_tile")
    once = {name: run(name) for name in names}
    assert probed, "no obligation here probes a real batch"
    monkeypatch.setattr(agg, "_mapped_sum", entrywise)
    assert {name: run(name) for name in names} == once


EXCLUDED_SPEC = """
from capproof import Range, Choice, obligation, at_most
from capproof.arith import total
from capproof.domain import Vector

D = {"n": Range(1, 4096), "cap": Range(1, 10**6), "k": Choice(1, 2, 3, 4), "lens": Vector(4096, Range(1, 8), length="n")}
FACTS = {"small k": lambda k: k <= 2, "budget": lambda lens, cap: total(lens) <= cap}

@obligation(domain=D, assumptions=FACTS)
def fits(n, cap, k, lens):
    return at_most(demand=total(lens) + k, capacity=cap + 2)

@obligation(domain=D, assumptions=FACTS, expect="counterexample")
def fails(n, cap, k, lens):
    return at_most(demand=total(lens) + k, capacity=cap + 1)

@obligation(domain=D, assumptions=FACTS)
def builtin_sum_where_excluded(n, cap, k, lens):
    if k > 2:  # only in the cases "small k" excludes: never checked
        return sum(d for d in lens) <= cap
    return at_most(demand=total(lens) + k, capacity=cap + 2)
"""


def test_an_excluded_aggregate_case_is_built_only_up_to_its_false_assumption(spec_file, monkeypatch):
    """k = 3, 4 are excluded by "small k": the case stops after the assumptions (no claim, facts or
    lemmas), and the verdicts, messages, cores and counterexamples are those of the cases built
    in full."""
    import capproof.aggregate as aggregate
    from capproof.aggregate import build_abstract_case
    from capproof.encode import checked_domains

    items = {it.name: it for it in load_file(spec_file(EXCLUDED_SPEC, "excluded_spec.py"))}
    finite, ranges, vectors = checked_domains(items["fits"], {}, 20_000_000)
    stopped = build_abstract_case(items["fits"], {"k": 3}, ranges, vectors, stop_if_excluded=True)
    full = build_abstract_case(items["fits"], {"k": 3}, ranges, vectors)
    assert stopped.false_assumptions == full.false_assumptions == ["small k"]
    assert stopped.constraints == [] and stopped.lemmas == [] and full.constraints
    admitted = build_abstract_case(items["fits"], {"k": 2}, ranges, vectors, stop_if_excluded=True)
    assert admitted.false_assumptions == [] and admitted.constraints and admitted.relation

    short = {name: prove_obligation(items[name], Options()) for name in ("fits", "fails")}
    monkeypatch.setattr(aggregate, "build_abstract_case", lambda *a, stop_if_excluded=False: build_abstract_case(*a))
    for name, r in short.items():
        b = prove_obligation(items[name], Options())
        assert r.encoding == b.encoding == "all batch sizes", (r.message, r.encoding_note)
        assert (r.verdict, r.message, r.excluded, r.cases, r.assumptions_used, r.encoding_note) == (
            b.verdict,
            b.message,
            b.excluded,
            b.cases,
            b.assumptions_used,
            b.encoding_note,
        )
        assert (r.counterexample and r.counterexample.params) == (b.counterexample and b.counterexample.params)
    assert short["fits"].verdict is Verdict.PROVED and short["fails"].verdict is Verdict.COUNTEREXAMPLE
    assert short["fits"].excluded == 2


def test_what_an_excluded_aggregate_case_would_do_after_its_assumptions_does_not_matter(spec_file, monkeypatch):
    """builtin sum() over the batch refuses the abstraction, but only in the excluded cases (k > 2):
    the abstraction now decides the obligation (before: not applicable, the bounded encoding)."""
    items = {it.name: it for it in load_file(spec_file(EXCLUDED_SPEC, "excluded_spec2.py"))}
    r = prove_obligation(items["builtin_sum_where_excluded"], Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes" and r.excluded == 2, (
        r.message,
        r.encoding_note,
    )


def test_minimal_cores_of_an_attempt_that_cannot_be_shown_are_not_computed(obs, monkeypatch):
    """With a counterexample on ints known and a batch of <= BOUNDED_CEX_LIMIT entries, the
    aggregate attempt's proofs keep Z3's cores (the attempt ends on the bounded encoding); if it
    proves every case (here: a fake int-probe hit on a true claim, so the verdict is an error),
    it is made again with its minimal cores, which the error shows."""
    import types

    import capproof.aggregate as aggregate
    import capproof.prover as prover

    ob = obs(6)["tokens_fit"]
    honest = prove_obligation(ob, Options())
    assert honest.verdict is Verdict.PROVED and honest.encoding == "all batch sizes"
    calls = []
    original = aggregate._minimal_core
    monkeypatch.setattr(aggregate, "_minimal_core", lambda *a: calls.append(1) or original(*a))
    monkeypatch.setattr(
        prover,
        "probe",
        lambda *a, **k: types.SimpleNamespace(
            params={"n": 1, "cap": 1, "k": 1, "lens": [2]}, values={"demand": 2, "capacity": 1}, rechecked_at=None
        ),
    )
    faked = prove_obligation(ob, Options())
    assert faked.verdict is Verdict.ERROR and "disagree" in faked.message, faked.message
    assert faked.assumptions_used == honest.assumptions_used and faked.encoding_note == honest.encoding_note
    assert len(calls) == honest.cases - honest.excluded  # the second attempt's, one per proved case


def _facts_by_z3py(n, T, M, m, lo, hi, extremes):
    """``aggregate_facts`` as written with z3py's operators (the reference)."""
    facts = [n * lo <= T, T <= n * hi]
    if extremes:
        facts += [
            lo <= m,
            m <= M,
            M <= hi,
            z3.Implies(n == 1, z3.And(T == M, M == m)),
            z3.Implies(n >= 2, z3.And((n - 1) * m + M <= T, T <= m + (n - 1) * M)),
            T >= M + (n - 1) * lo,
            T <= m + (n - 1) * hi,
        ]
    return z3.And(*facts)


def _mapped_by_z3py(n, T, y_max, y_min):
    """``mapped_facts`` as written with z3py's operators (the reference)."""
    return z3.And(
        z3.Implies(n == 1, z3.And(T == y_max, y_max == y_min)),
        z3.Implies(n >= 2, z3.And((n - 1) * y_min + y_max <= T, T <= y_min + (n - 1) * y_max)),
    )


@pytest.mark.parametrize("extremes", [False, True])
@pytest.mark.parametrize("n_kind", ["var", "numeral", "term"])
@pytest.mark.parametrize("other_kind", ["var", "numeral"])
def test_aggregate_and_mapped_facts_build_z3pys_terms_with_the_same_ids(extremes, n_kind, other_kind):
    """``aggregate_facts``/``mapped_facts`` through ``_Built``: the very terms z3py's
    operators build (the reflected comparisons included: an int on the left, a numeral on the
    right), and the terms made after them get the same ids; a Real operand takes z3py's path."""
    from capproof.aggregate import mapped_facts
    from capproof.symbolic import fresh_z3_context

    def run(build, mapped):
        with fresh_z3_context():
            n = {"var": z3.Int("n"), "numeral": z3.IntVal(5), "term": z3.Int("k") + 1}[n_kind]
            T, M = z3.Int("T"), z3.Int("M")
            m = z3.Int("m") if other_kind == "var" else z3.IntVal(2)  # an IntNumRef after ArithRefs
            built = mapped(n, T, M, m) if extremes is None else build(n, T, M, m, -3, 17, extremes)
            built2 = mapped(n, z3.Int("t"), M * 2, m)
            after = [z3.IntVal(8675309), T * 7 - M, z3.Int("later")]
            return built.sexpr(), built2.sexpr(), [built.get_id(), built2.get_id(), *(t.get_id() for t in after)]

    assert run(aggregate_facts, mapped_facts) == run(_facts_by_z3py, _mapped_by_z3py)
    x = z3.Real("x")
    assert mapped_facts(z3.Int("n"), z3.Int("T"), x, x).eq(_mapped_by_z3py(z3.Int("n"), z3.Int("T"), x, x))
