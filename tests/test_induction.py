"""Induction over the batch (capproof.induction): the rule's validity (a claim true up to
N entries but false at N + 1 is not proved for every size; a non-inductive invariant falls back to
the bounded encoding), where it applies, the invariants on ints, and the DSA indexer's uniform
split (vLLM 0.33.0 ``split_decodes_and_prefills(require_uniform=True)``) proved for every batch size."""

from __future__ import annotations

import itertools

import pytest
from conftest import obligation_named

from capproof import Options, Verdict
from capproof.arith import InvariantError, Padded, checking_invariants, fold, total
from capproof.loader import load_file
from capproof.prover import prove_obligation, replay
from models.vllm.indexer_buffers import has_padding_request, split_decodes_require_uniform, uniform_decode_split

SPEC = '''
from capproof import Range, Choice, obligation, at_most, claim, all_of, any_of, implies, select
from capproof.arith import minimum
from capproof.arith import fold, total
from capproof.domain import Vector

D = {"n": Range(1, SIZE), "lens": Vector(SIZE, Range(0, 8), length="n")}


def walked(lens):
    # every entry of a vector without a length parameter: SIZE here, more on a larger vector
    return fold(lambda c, i, x: c + 1, 0, lens)


@obligation(domain={"lens": Vector(SIZE, Range(0, 8))})
def entries_walked_fit(lens):
    return at_most(demand=walked(lens), capacity=CAP)


def active(lens, n, invariant=None):
    return fold(lambda c, i, x: c + select(i < n, 1, 0), 0, lens, invariant=invariant)


@obligation(domain=D)
def active_entries_fit(n, lens):
    """True for every vector size (n <= SIZE), but not inductive as stated (c <= SIZE)."""
    return at_most(demand=active(lens, n), capacity=SIZE)


@obligation(domain=D)
def active_entries_fit_with_invariant(n, lens):
    return at_most(demand=active(lens, n, invariant=lambda c, i, seen: all_of(0 <= c, c <= n, c <= i)), capacity=SIZE)


@obligation(domain=D)
def active_entries_fit_with_false_invariant(n, lens):
    """The invariant c == 0 is false after one entry: base holds, step fails, so the bounded encoding decides."""
    return at_most(demand=active(lens, n, invariant=lambda c, i, seen: c == 0), capacity=SIZE)


def evens(lens, n, invariant=None):
    return fold(lambda s, i, x: s + select(i < n, 2, 0), 0, lens, invariant=invariant)


@obligation(domain=D)
def never_one(n, lens):
    """s != 1 holds (s is even) but is not inductive by itself (s = -1 steps to 1)."""
    return claim(evens(lens, n) != 1, s=evens(lens, n))


@obligation(domain=D)
def never_one_with_invariant(n, lens):
    return claim(evens(lens, n, invariant=lambda s, i, seen: all_of(s >= 0, s % 2 == 0)) != 1, s=evens(lens, n))


@obligation(domain=D, assumptions={"budget": lambda lens: total(lens) <= 12})
def running_offset_within_budget(n, lens):
    """A prefix walk with the claim as its own invariant (the running offset <= the tokens seen)."""
    offset = fold(lambda o, i, x: o + select(i < n, x, 0), 0, lens,
                  invariant=lambda o, i, seen: o == total(seen))
    return at_most(demand=offset, capacity=12)


@obligation(domain=D, assumptions={"budget": lambda lens: total(lens) <= 12}, expect="counterexample")
def running_offset_over_budget(n, lens):
    offset = fold(lambda o, i, x: o + select(i < n, x, 0), 0, lens,
                  invariant=lambda o, i, seen: o == total(seen))
    return at_most(demand=offset + lens[0], capacity=12)


@obligation(domain=D, assumptions={"impossible": lambda lens: total(lens) < 0})
def nothing_admitted(n, lens):
    return at_most(demand=active(lens, n, invariant=lambda c, i, seen: all_of(c >= 0, total(seen) >= 0)), capacity=0)


@obligation(domain=D, assumptions={"each entry <= 3": lambda lens: all_of(*(x <= 3 for x in lens))})
def offset_within_per_entry_bound(n, lens):
    """A per-entry assumption (all_of over the batch) is a walk too: the offset <= 3 per entry seen."""
    offset = fold(lambda o, i, x: o + select(i < n, x, 0), 0, lens,
                  invariant=lambda o, i, seen: implies(all_of(*(x <= 3 for x in seen)), o <= 3 * minimum(i, n)))
    return at_most(demand=offset, capacity=3 * n)


@obligation(domain=D, assumptions={"some entry <= 3": lambda lens: any_of(*(x <= 3 for x in lens))})
def by_any_of(n, lens):
    return at_most(demand=fold(lambda c, i, x: c + 1, 0, lens), capacity=SIZE)


@obligation(domain=D)
def by_len(n, lens):
    return at_most(demand=fold(lambda c, i, x: c + x, 0, lens), capacity=8 * len(lens))


@obligation(domain=D)
def by_symbolic_index(n, lens):
    return at_most(demand=fold(lambda c, i, x: c + lens[i], 0, lens), capacity=8 * SIZE)
'''


@pytest.fixture
def obs(spec_file):
    def load(size, cap=None):
        text = SPEC.replace("SIZE", str(size)).replace("CAP", str(size if cap is None else cap))
        return {it.name: it for it in load_file(spec_file(text, f"ind_spec_{size}_{cap}.py"))}

    return load


def _every_size(r):
    return (
        r.verdict is Verdict.PROVED
        and r.encoding == "all batch sizes"
        and r.encoding_note.startswith("induction over the batch")
    )


def test_a_claim_true_up_to_n_entries_but_false_at_n_plus_1_is_not_proved_for_every_size(obs):
    """The walk counts every entry: 6 <= 6 on a 6-entry vector (bounded: proved), 7 > 6 on a
    7-entry one. Induction must not say `all batch sizes`; the bounded verdict says `batches <= 6`."""
    r = prove_obligation(obs(6)["entries_walked_fit"], Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "batches <= 6", (r.encoding, r.message)
    assert "induction over the batch" in r.encoding_note and "not inductive" in r.encoding_note
    ob7 = obs(7, cap=6)["entries_walked_fit"]
    r7 = prove_obligation(ob7, Options(density="off"))
    assert r7.verdict is Verdict.COUNTEREXAMPLE and r7.encoding == "batches <= 7", r7.message
    holds, values, failed = replay(ob7, r7.counterexample.params)
    assert not holds and values == {"demand": 7, "capacity": 6} and not failed


def test_a_claim_that_is_not_inductive_falls_back_and_an_invariant_proves_it(obs):
    o = obs(6)
    plain = prove_obligation(o["active_entries_fit"], Options())
    assert plain.verdict is Verdict.PROVED and plain.encoding == "batches <= 6"
    assert "the claim at every prefix: not inductive" in plain.encoding_note, plain.encoding_note
    strong = prove_obligation(o["active_entries_fit_with_invariant"], Options())
    assert _every_size(strong), (strong.encoding, strong.encoding_note, strong.message)
    odd = prove_obligation(o["never_one"], Options())
    assert odd.verdict is Verdict.PROVED and odd.encoding == "batches <= 6" and "not inductive" in odd.encoding_note
    even = prove_obligation(o["never_one_with_invariant"], Options())
    assert _every_size(even), even.encoding_note


def test_a_false_invariant_is_not_trusted(obs):
    ob = obs(6)["active_entries_fit_with_false_invariant"]
    r = prove_obligation(ob, Options())
    assert r.verdict is Verdict.PROVED and r.encoding == "batches <= 6", r.encoding_note
    assert "not inductive" in r.encoding_note
    with checking_invariants(), pytest.raises(InvariantError):
        replay(ob, {"n": 2, "lens": [1, 1]})


def test_prefix_walk_proved_for_every_size_and_counterexamples_come_from_the_bounded_encoding(obs):
    o = obs(64)
    r = prove_obligation(o["running_offset_within_budget"], Options())
    assert _every_size(r) and "budget" in r.assumptions_used, r.message
    bad = prove_obligation(o["running_offset_over_budget"], Options(density="off"))
    assert bad.verdict is Verdict.COUNTEREXAMPLE and bad.encoding == "batches <= 64"
    holds, values, failed = replay(o["running_offset_over_budget"], bad.counterexample.params)
    assert not holds and not failed


def test_a_claim_no_batch_is_admitted_for_is_vacuous_not_proved(obs):
    r = prove_obligation(obs(6)["nothing_admitted"], Options())
    assert r.verdict is Verdict.VACUOUS and "no final state admitted" in r.encoding_note, (
        r.verdict,
        r.message,
        r.encoding_note,
    )


def test_per_entry_assumptions_are_walks(obs):
    r = prove_obligation(obs(6)["offset_within_per_entry_bound"], Options())
    assert _every_size(r) and "each entry <= 3" in r.assumptions_used, (r.encoding_note, r.assumptions_used)


@pytest.mark.parametrize(
    "name, why",
    [("by_len", "len() of batch"), ("by_symbolic_index", "indexed by"), ("by_any_of", "iterated other than")],
)
def test_induction_refuses_what_it_cannot_capture(obs, name, why):
    r = prove_obligation(obs(6)[name], Options())
    assert r.encoding == "batches <= 6" and why in r.encoding_note, r.encoding_note


# --- fold on ints -------------------------------------------------------------------------------


def test_fold_is_the_plain_loop_and_sees_the_padding():
    xs = Padded((3, 1, 4, 0, 0), 3, 0, 0, 8)
    assert fold(lambda s, i, x: s + [(i, x)], [], xs) == [(0, 3), (1, 1), (2, 4), (3, 0), (4, 0)]
    assert fold(lambda s, i, x: s + x, 0, []) == 0
    seen = []
    with checking_invariants():
        fold(lambda s, i, x: s + x, 0, xs, invariant=lambda s, i, p: seen.append((i, total(p))) or s == total(p))
    assert seen == [(0, 0), (1, 3), (2, 4), (3, 8), (4, 8), (5, 8)]


# --- the DSA indexer's uniform split (vLLM 0.33.0) ----------------------------------------------


def _batches(size, lens):
    for n in range(1, size + 1):
        for active in itertools.product(lens, repeat=n):
            yield n, Padded(tuple(active) + (0,) * (size - n), n, 0, 0, 2**16)


def test_uniform_split_invariant_holds_on_every_small_batch():
    """The invariant the induction rests on, checked on ints after every prefix of every batch of
    up to 5 requests with query lengths 0..3 (padding requests and prefills included)."""
    checked = 0
    with checking_invariants():
        for n, q in _batches(5, range(0, 4)):
            for k in (1, 2):
                uniform_decode_split(q, n, k)
                checked += 1
    assert checked > 1000


def test_uniform_split_values_on_cuda_graph_padded_and_mixed_batches():
    """DeepSeek-V3.2 with MTP K=1 (next_n 2, corpus E6 setting): two decodes then a padding
    request then a prefill; an all-decode batch; a first request longer than next_n."""
    q = Padded((2, 2, 0, 7, 2), 5, 0, 0, 2**16)
    assert uniform_decode_split(q, 5, 1) == (3, 2)
    assert uniform_decode_split(Padded((2, 2, 2, 0), 3, 0, 0, 2**16), 3, 1) == (3, 2)
    assert uniform_decode_split(Padded((3, 2, 2), 3, 0, 0, 2**16), 3, 1) == (0, 0)
    assert split_decodes_require_uniform(q, 5, 1) == 3
    assert has_padding_request(q, 5) and not has_padding_request(q, 2)


def test_padded_decode_rows_fit_0_33_is_proved_for_every_batch_size():
    r = prove_obligation(obligation_named("spec/vllm_0_33_today.py", "padded_decode_rows_fit_0_33"), Options())
    assert _every_size(r), (r.verdict, r.encoding, r.encoding_note, r.message)
    assert "sum of scheduled tokens <= max_num_batched_tokens" in r.assumptions_used
    assert "zero-length requests only as uniform CUDA-graph padding" in r.assumptions_used


def test_without_the_padding_fact_the_uniform_split_is_not_proved():
    """Drop the CUDA-graph padding fact: zero-length requests then pad the view beyond the token
    budget; induction must not prove it, and the bounded encoding finds it (replayed on ints)."""
    import dataclasses

    ob = obligation_named("spec/vllm_0_33_today.py", "padded_decode_rows_fit_0_33")
    facts = {k: v for k, v in ob.assumptions.items() if k != "zero-length requests only as uniform CUDA-graph padding"}
    dom = dict(ob.domain)
    from capproof import Range
    from capproof.domain import Vector

    dom["max_num_seqs"] = Range(1, 4)
    dom["num_reqs"] = Range(1, 4)
    dom["query_lens"] = Vector(4, Range(0, 2**16), length="num_reqs")
    weak = dataclasses.replace(ob, assumptions=facts, domain=dom, expect="counterexample")
    r = prove_obligation(weak, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "batches <= 4", (r.verdict, r.message)
    holds, values, failed = replay(weak, r.counterexample.params)
    assert not holds and not failed and values["padded_rows"] > values["topk_indices_rows"]


# --- MoE align: every sorted_token_ids write for every number of experts (vLLM 0.33.0) ---------

MOE_WRITES = """
from capproof import Range, Choice, obligation, claim, all_of
from capproof.arith import total
from capproof.domain import Vector
from models.moe_align import align_writes, expert_ids_capacity, vllm_sorted_ids_capacity

D = {"numel": Range(1, 2**20), "num_experts": Choice(8, SIZE), "block_size_m": Choice(16, 64),
     "pad_sorted_ids": Choice(0, 1), "counts": Vector(SIZE, Range(0, 2**20), length="num_experts")}
ONCE = {"every routed id is counted once": lambda counts, numel: total(counts) == numel}

@obligation(domain=D, assumptions=ONCE)
def writes_fit(numel, num_experts, block_size_m, pad_sorted_ids, counts):
    capacity = vllm_sorted_ids_capacity(numel, num_experts, block_size_m, pad_sorted_ids) - SHORT
    post_pad, last_write = align_writes(counts, num_experts, block_size_m)
    return claim(all_of(last_write < capacity, post_pad // block_size_m <= expert_ids_capacity(capacity, block_size_m)),
                 last_write=last_write, capacity=capacity)
"""


def test_moe_align_writes_are_proved_for_every_number_of_experts_and_a_short_buffer_is_refuted(spec_file):
    """spec/moe_align.py's vllm_write_positions_within_sorted_ids as a walk: proved by induction
    with a 1024-entry routing vector (the bounded encoding took over 14 minutes at 1024 experts);
    a sorted_token_ids one entry short is not proved, and the bounded encoding (8 experts) finds a
    counterexample that replays on ints."""
    src = MOE_WRITES.replace("SIZE", "1024").replace("SHORT", "0")
    ob = load_file(spec_file(src, "moe_writes_1024.py"))[0]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note
    assert "induction" in r.encoding_note
    short = load_file(spec_file(MOE_WRITES.replace("SIZE", "8").replace("SHORT", "1"), "moe_writes_short.py"))[0]
    r = prove_obligation(short, Options(density="off"))
    assert r.verdict is Verdict.COUNTEREXAMPLE and r.encoding == "batches <= 8", r.encoding_note
    holds, values, failed = replay(short, r.counterexample.params)
    assert not holds and not failed and values == r.counterexample.values


def test_moe_align_writes_invariant_is_inductive_at_a_size_the_bounded_encoding_also_decides(spec_file):
    """The same obligation with 8 or 16 experts (a 16-entry routing vector, padded past 8): proved
    by the induction, not by the bounded encoding (which would also prove it here), so
    align_writes's invariant is inductive and, with the claim at every prefix, implies it. A
    conjunct dropped or loosened, or an invariant that raises, sends the prover to the bounded
    encoding (at 1024 experts: over 14 minutes)."""
    ob = load_file(spec_file(MOE_WRITES.replace("SIZE", "16").replace("SHORT", "0"), "moe_writes_16.py"))[0]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.PROVED and r.encoding == "all batch sizes", r.encoding_note


def test_a_model_failing_on_the_small_witness_batch_falls_back_not_raises(spec_file):
    """prove_obligation never raises: a model reading ``xs[10]`` (fine on the declared 16 entries)
    raised IndexError out of the induction's non-vacuity search on its 1-entry batch (found by the
    session-12 adversarial pass). Now the induction refuses a read at or past the least batch
    length, and the bounded encoding decides: the padded vector has an entry 10, a batch of fewer
    than 11 requests alone has none (IndexError), so an error, not a proof."""
    src = """
from capproof import Range, obligation, at_most
from capproof.arith import fold
from capproof.domain import Vector

@obligation(domain={"n": Range(1, 16), "xs": Vector(16, Range(0, 3), length="n")})
def past_the_end(n, xs):
    walked = fold(lambda s, i, x: s + x, 0, xs, invariant=lambda s, i, seen: s >= 0)
    return at_most(demand=xs[10] - 10, capacity=walked + 100)
"""
    ob = load_file(spec_file(src, "past_the_end.py"))[0]
    r = prove_obligation(ob, Options(density="off"))
    assert r.verdict is Verdict.ERROR and r.encoding == "batches <= 16", (r.verdict, r.encoding, r.encoding_note)
    assert "on the batch alone" in r.message and "IndexError" in r.message, r.message


def test_a_pinned_batch_length_is_not_reported_as_every_batch_size_by_induction(obs):
    """With the batch length pinned (``--set n=2``) an induction proof covers that length only: the
    message says so instead of "every batch size"."""
    ob = obs(64)["running_offset_within_budget"]
    free = prove_obligation(ob, Options())
    pinned = prove_obligation(ob, Options(pins={"n": 2}))
    assert free.verdict is Verdict.PROVED and "every batch size" in free.message
    assert pinned.verdict is Verdict.PROVED, pinned.message
    assert "every batch size" not in pinned.message
    assert "n=2" in pinned.message and "pinned in this run" in pinned.encoding_note
