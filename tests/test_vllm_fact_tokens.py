"""The fact "padded tokens <= max_num_batched_tokens" on every path that sets a token count
(capproof/engines/vllm/fact_tokens.py).

Fast tests read small source trees (AST); the real tier runs vLLM 0.33.0's own code."""

import textwrap

import pytest

from capproof.engines.vllm import fact_tokens as ft

UBATCH_OK = """
def _pad_out_ubatch_slices(ubatch_slices, num_total_tokens, num_reqs_padded):
    last_slice = ubatch_slices[-1]
    padded_last_token_slice = slice(last_slice.token_slice.start, num_total_tokens)
    return ubatch_slices[:-1] + [padded_last_token_slice]

def maybe_create_ubatch_slices(should_ubatch, num_scheduled_tokens, num_tokens_padded, num_reqs_padded, n):
    ubatch_slices = []
    ubatch_slices_padded = _pad_out_ubatch_slices(ubatch_slices, num_tokens_padded, num_reqs_padded)
    return ubatch_slices, ubatch_slices_padded
"""


def _tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_ubatch_padding_checked_when_the_last_slice_ends_at_the_padded_count(tmp_path):
    root = _tree(tmp_path, {ft.UBATCH: UBATCH_OK})
    rec = ft.ubatch_padding(root)
    assert rec["checked"] is True
    assert rec["paths"]["checked (ast)"][0].startswith(f"{ft.UBATCH}:9 ")


def test_ubatch_padding_not_checked_when_padded_past_the_count(tmp_path):
    # a microbatch padded to twice the count: the fact does not follow from the source
    root = _tree(
        tmp_path,
        {ft.UBATCH: UBATCH_OK.replace("(ubatch_slices, num_tokens_padded,", "(ubatch_slices, 2 * num_tokens_padded,")},
    )
    rec = ft.ubatch_padding(root)
    assert rec["checked"] is False
    assert list(rec["paths"]) == ["not checked"]


def test_proposer_classes_read_pass_hidden_states_and_overrides(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/v1/spec_decode/eagle.py": """
                class EagleProposer(Base):
                    def __init__(self, c):
                        super().__init__(c, pass_hidden_states_to_model=True)
            """,
            "vllm/v1/spec_decode/dflash.py": """
                class DFlashProposer(Base):
                    def __init__(self, c):
                        super().__init__(c, pass_hidden_states_to_model=True)
                    def set_inputs_first_pass(self):
                        pass
            """,
            "vllm/v1/spec_decode/odd.py": """
                class Odd(Base):
                    def __init__(self, c, flag):
                        super().__init__(c, pass_hidden_states_to_model=flag)
            """,
        },
    )
    assert ft._proposer_classes(root) == [
        ("vllm/v1/spec_decode/dflash.py", "DFlashProposer", True, True),
        ("vllm/v1/spec_decode/eagle.py", "EagleProposer", True, False),
        ("vllm/v1/spec_decode/odd.py", "Odd", None, False),
    ]


def test_paths_of_keeps_a_bounded_run_not_checked():
    rec = {
        "paths": {
            "checked (executed, bounded)": ["a.py:1 ran 3 configurations"],
            "checked (ast)": ["b.py:2 read"],
            "not checked": ["c.py:3 skipped"],
        }
    }
    got = [(p["site"], p["how"], p["result"]) for p in ft._paths_of(rec, "x")]
    assert got == [
        ("a.py:1", "executed", "not checked"),
        ("b.py:2", "ast", "checked"),
        ("c.py:3", "ast", "not checked"),
    ]


@pytest.fixture(scope="module")
def vllm_root():
    pytest.importorskip("torch")
    from capproof.engines.vllm import wheels

    try:
        wheels.activate()
    except wheels.WheelsUnavailable as exc:
        pytest.skip(str(exc))
    from capproof.engines.vllm import trace  # noqa: F401 - stand-ins the imports need

    return wheels.source_root("vllm", "0.33.0")


@pytest.mark.real
def test_real_drafter_padding_is_at_most_its_inputs_and_capture_sizes(vllm_root):
    extent, notes = ft.drafter_padded_tokens()
    # vLLM 0.33.0: the re-dispatch after DP padding asserts it kept the synced count, so the
    # own rank's DP capture size never reaches the result
    assert extent == (
        "maximum(num_tokens_draft, maximum(num_tokens_draft_other_rank, maximum(capture_size_other_rank, capture_size)))"
    )
    assert any("stop at an engine assert" in n for n in notes)


@pytest.mark.real
def test_real_drafter_inputs_checked_except_dflash(vllm_root):
    rec = ft.drafter_input_tokens(vllm_root)
    assert rec["paths"]["not checked"] == [
        "vllm/v1/spec_decode/dflash.py DFlashProposer.set_inputs_first_pass (its own first pass: token count not checked here)"
    ]
    checked = " ".join(rec["paths"]["checked (ast, executed)"])
    for cls in ("DraftModelProposer", "EagleProposer", "Gemma4Proposer"):
        assert cls in checked
    assert "vllm/config/scheduler.py:331" in checked


@pytest.mark.real
def test_real_v2_padding_bounded_run_finds_no_overflow_and_stays_not_checked(vllm_root):
    rec = ft.v2_padded_tokens(configs=2)
    assert rec["counterexample"] is None
    assert rec["checked"] is False


_PROCESSOR = """
class InputProcessor:
    def _validate_prompt_len(self, prompt_len, prompt_type):
        model_config = self.model_config
        max_prompt_len = model_config.max_model_len if prompt_type == "decoder" else self.mm_encoder_cache_size
        if prompt_len > max_prompt_len:
            raise VLLMValidationError("too long")
"""
_BATCH = """
class InputBatch:
    def add_request(self, request, req_index, num_prompt_tokens):
        self.token_ids_cpu[req_index, :num_prompt_tokens] = request.prompt_token_ids
"""
_RUNNER = """
class GPUModelRunner:
    def _bookkeeping_sync(self, req_idx, start_idx, end_idx, sampled_ids):
        assert end_idx <= self.max_model_len
        self.input_batch.token_ids_cpu[req_idx, start_idx:end_idx] = sampled_ids
"""


def test_model_len_fact_checks_the_prompt_and_sampled_sites_and_leaves_the_rest_assumed(tmp_path):
    root = _tree(tmp_path, {ft.INPUT_PROCESSOR: _PROCESSOR, ft.INPUT_BATCH: _BATCH, ft.RUNNER: _RUNNER})
    fact = ft.model_len_fact(root)
    got = {p["site"]: p["result"] for p in fact["paths"]}
    assert got[f"{ft.INPUT_BATCH}:4"] == "checked"
    assert got[f"{ft.RUNNER}:5"] == "checked"
    assert [p["result"] for p in fact["paths"]].count("not checked") == 5  # resumed, draft, async-PP, swap, condense
    assert fact["assumptions"] == [ft.MODEL_LEN_ASSUMPTION]


def test_model_len_fact_without_the_prompt_check_is_not_checked_there(tmp_path):
    root = _tree(
        tmp_path,
        {
            ft.INPUT_PROCESSOR: _PROCESSOR.replace("raise VLLMValidationError", "log"),
            ft.INPUT_BATCH: _BATCH,
            ft.RUNNER: _RUNNER.replace("assert end_idx <= self.max_model_len", "pass"),
        },
    )
    got = {p["site"]: p["result"] for p in ft.model_len_fact(root)["paths"]}
    assert got[f"{ft.INPUT_BATCH}:4"] == "not checked"
    assert got[f"{ft.RUNNER}:?"] == "not checked"


def test_committed_token_facts_say_where_they_are_checked():
    """The token facts of vLLM 0.33.0 as `capproof inventory` wrote them (proofs/inventory/
    vllm-0.33.0.facts.json): the V1 runner's, the drafter's two and the DFlash admission fact are
    checked on every path; V2 is refuted by the DFlash/DSpark query pass after the target's
    post-capture dummy runs (finding 11) and not checked on two target-dependent dispatches."""
    import json
    import os

    from capproof import facts as F

    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "proofs", "inventory", "vllm-0.33.0.facts.json")
    with open(path, encoding="utf-8") as fh:
        facts = {f["fact"].split(":")[0]: f for f in json.load(fh)["facts"]}
    runner = facts["V1 runner"]
    assert F.status(runner) == "checked" and runner["scope"] == [ft.RUNNER]
    assert any(p["how"] == "executed" for p in runner["paths"])
    for name in ("V1 drafter", "V1 drafter first pass", "V1 DFlash first pass"):
        assert F.status(facts[name]) == "checked", name
    assert "vllm/v1/spec_decode/dflash.py:124-127" in {p["site"] for p in facts["V1 drafter"]["paths"]}
    assert F.status(facts["V2 runner"]) == "refuted"
    assert [p["site"] for p in F.unchecked_paths(facts["V2 runner"])] == [
        "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py:258",
        "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py:334",
        "vllm/v1/worker/gpu/model_runner.py:1141-1145",
    ]
    cex = facts["V2 runner"]["counterexamples"]
    assert cex and all(c["reproduced"] and c["finding"] == "docs/findings.md, finding 11" for c in cex)
    assert {p["how"] for p in facts["V2 runner"]["paths"] if p["result"] == "checked"} == {"ast", "executed"}
    assert F.status(facts["V1 input batch"]) == "assumed"
