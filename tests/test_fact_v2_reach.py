"""The may-reach reading of a V2 batch-building site (capproof/engines/vllm/fact_v2_reach.py), on a
stand-in source tree shaped like vLLM's V2 runner: a PCP-like manager builds a rank-local batch with
``replace``, the runner hands it to attention preparation, and rebinds the global batch before
sampling."""

from __future__ import annotations

import textwrap

import pytest

from capproof.engines.vllm.fact_v2_reach import _flow, _Index, entry_reach, reach, split_by_reach
from capproof.facts import fact_record, in_scope, path_record, status

GPU = "vllm/v1/worker/gpu"

FILES = {
    "pcp_manager.py": """
        from dataclasses import replace

        class PCPManager:
            def partition_batch(self, input_batch):
                self._global_batch = input_batch
                local = replace(input_batch, num_reqs=2 * input_batch.num_reqs)
                self._local_batch = local
                return local

            @property
            def global_batch(self):
                return self._global_batch
    """,
    "model_states/default.py": """
        import torch

        class ModelState:
            def __init__(self, max_num_reqs):
                self.seq_rows = torch.zeros(max_num_reqs)
                self.alias_rows = torch.zeros(max_num_reqs)
                self.helper_rows = torch.zeros(max_num_reqs)
                self.fixed_rows = torch.zeros(max_num_reqs)

            def prepare_attn(self, input_batch):
                self.seq_rows[: input_batch.num_reqs] = 1
                rows = self.alias_rows
                n = input_batch.num_reqs
                rows[:n] = 2
                fill(self.helper_rows, input_batch)
                self.fixed_rows[:1] = 3
                return build(input_batch.num_reqs)

        def build(n):
            return n

        def fill(buf, batch):
            buf[: batch.num_reqs] = 0
    """,
    "sample/sampler.py": """
        class Sampler:
            def __init__(self, max_num_reqs):
                self.rows = torch.zeros(max_num_reqs)

            def __call__(self, input_batch):
                return self.rows[: input_batch.num_reqs]
    """,
    "model_runner.py": """
        from vllm.v1.worker.gpu.model_states import init_model_state

        class ExecuteModelState:
            pass

        class GPUModelRunner:
            def __init__(self):
                self.pcp_manager = PCPManager()
                self.sampler = Sampler()
                self.model_state: ModelState = init_model_state()

            def prepare_inputs(self, so):
                input_batch = make(so)
                if self.pcp_manager is not None:
                    input_batch = self.pcp_manager.partition_batch(input_batch)
                return input_batch

            def execute_model(self, so):
                input_batch = self.prepare_inputs(so)
                meta = self.model_state.prepare_attn(input_batch)
                hidden = self.model(input_batch.input_ids)
                self.state = ExecuteModelState(input_batch=input_batch, hidden=hidden, meta=meta)

            def sample_tokens(self):
                input_batch = self.state.input_batch
                hidden = self.state.hidden
                if self.pcp_manager is not None:
                    input_batch = self.pcp_manager.global_batch
                return self.sampler(input_batch)
    """,
}


@pytest.fixture()
def tree(tmp_path):
    for rel, text in FILES.items():
        path = tmp_path / GPU / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def _line(root, rel, text):
    with open(f"{root}/{GPU}/{rel}") as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


def test_local_batch_reaches_attention_not_the_sampler(tree):
    line = _line(tree, "pcp_manager.py", "replace(")
    r = reach(tree, f"{GPU}/pcp_manager.py", line)
    assert r is not None
    assert f"{GPU}/model_states/default.py" in r.files  # prepare_attn receives the local batch
    assert f"{GPU}/model_runner.py" in r.files
    # sample_tokens rebinds the global batch under PCP before calling the sampler
    assert f"{GPU}/sample/sampler.py" not in r.files


def test_without_the_rebind_the_sampler_is_reached(tree):
    path = f"{tree}/{GPU}/model_runner.py"
    text = open(path).read().replace("input_batch = self.pcp_manager.global_batch", "pass")
    open(path, "w").write(text)
    line = _line(tree, "pcp_manager.py", "replace(")
    r = reach(tree, f"{GPU}/pcp_manager.py", line)
    assert f"{GPU}/sample/sampler.py" in r.files


def test_model_output_does_not_carry_the_batch(tree):
    """The forward's output (``self.model(...)``) is per token: reading ``state.hidden`` in the
    sampled step does not make the sampler reached."""
    path = f"{tree}/{GPU}/model_runner.py"
    text = open(path).read().replace("return self.sampler(input_batch)", "return self.sampler(hidden)")
    open(path, "w").write(text)
    line = _line(tree, "pcp_manager.py", "replace(")
    r = reach(tree, f"{GPU}/pcp_manager.py", line)
    assert f"{GPU}/sample/sampler.py" not in r.files


def test_split_gives_the_unreached_files_a_fact_without_the_site(tree):
    line = _line(tree, "pcp_manager.py", "replace(")
    site = f"{GPU}/pcp_manager.py:{line}"
    fact = fact_record(
        "V2 request count <= max_num_reqs",
        ["padded requests <= max_num_reqs"],
        [f"{GPU}/"],
        [
            path_record(f"{GPU}/model_runner.py:1", "make(so)", "ast", "checked"),
            path_record(site, "replace(batch, num_reqs=...) replace(num_reqs=2 * n)", "executed", "counterexample"),
        ],
        [{"site": f"{GPU}/pcp_manager.py:{line}", "deployment": "PCP 2", "values": {}, "reproduced": True}],
    )
    facts = split_by_reach(tree, fact)
    assert len(facts) == 2
    by_scope = {in_scope(f, f"{GPU}/sample/sampler.py"): f for f in facts}
    sampler, forward = by_scope[True], by_scope[False]
    assert status(forward) == "refuted"
    assert in_scope(forward, f"{GPU}/model_states/default.py")
    assert status(sampler) == "checked"
    assert [p["result"] for p in sampler["paths"] if p["site"] == site] == ["checked"]
    assert site in sampler["reach"]
    # the two scopes cover the directory without overlap (a whole directory written as its prefix)
    assert in_scope(sampler, f"{GPU}/sample/sampler.py") and sampler["scope"] == [f"{GPU}/sample/"]
    for rel in FILES:
        assert in_scope(sampler, f"{GPU}/{rel}") != in_scope(forward, f"{GPU}/{rel}")


# ------------------------------------------------------------------------------------------------
# per entry: does the batch meet the entry's buffer (its uses), not only its file


def _entries():
    return [
        {
            "id": f"{GPU}/model_states/default.py::ModelState.{a}",
            "file": f"{GPU}/model_states/default.py",
            "owner": "ModelState",
            "attribute": a,
        }
        for a in ("seq_rows", "alias_rows", "helper_rows", "fixed_rows")
    ] + [
        {
            "id": f"{GPU}/sample/sampler.py::Sampler.rows",
            "file": f"{GPU}/sample/sampler.py",
            "owner": "Sampler",
            "attribute": "rows",
        }
    ]


def _met(tree):
    ix = _Index(tree)
    flow = _flow(ix, f"{GPU}/pcp_manager.py", _line(tree, "pcp_manager.py", "replace("))
    return {k.rsplit(".", 1)[1]: v for k, v in entry_reach(ix, flow, _entries()).items()}


def test_the_local_batch_meets_buffers_it_indexes_directly_through_an_alias_and_a_callee(tree):
    met = _met(tree)
    assert met["seq_rows"][0] and "default.py" in met["seq_rows"][1]
    assert met["alias_rows"][0]  # rows = self.alias_rows; rows[:n] with n from the local batch
    assert met["helper_rows"][0]  # fill(self.helper_rows, input_batch): the batch goes along
    # a buffer of the same file sliced by a constant: the file is reached, the buffer is not
    assert not met["fixed_rows"][0] and "uses" in met["fixed_rows"][1]
    # the sampler is handed the global batch (rebound under PCP)
    assert not met["rows"][0]


def test_a_returned_buffer_is_followed_to_its_callers(tree):
    """``return self.fixed_rows`` hands the buffer to ``execute_model``, whose statement reads the batch."""
    path = f"{tree}/{GPU}/model_states/default.py"
    text = open(path).read().replace("self.fixed_rows[:1] = 3", "return self.fixed_rows")
    open(path, "w").write(text)
    met = _met(tree)
    assert met["fixed_rows"][0] and "model_runner.py" in met["fixed_rows"][1]


def test_a_buffer_stored_into_another_object_counts_as_met(tree):
    """Where the reading cannot follow the buffer (stored into another object), it counts as met."""
    path = f"{tree}/{GPU}/model_states/default.py"
    text = open(path).read().replace("self.fixed_rows[:1] = 3", "self.saved = [self.fixed_rows]")
    open(path, "w").write(text)
    met = _met(tree)
    assert met["fixed_rows"][0] and "not followed" in met["fixed_rows"][1]


def test_a_use_through_another_class_is_not_the_entrys(tree):
    """``other.rows`` with ``other`` annotated with a class unrelated to the owner is not a use of
    ``Sampler.rows``."""
    path = f"{tree}/{GPU}/model_states/default.py"
    text = (
        open(path).read()
        + textwrap.dedent("""
        class Other:
            pass

        def unrelated(other: Other, input_batch):
            other.rows[: input_batch.num_reqs] = 0
    """)
    ).replace("self.fixed_rows[:1] = 3", "unrelated(self, input_batch)")
    open(path, "w").write(text)
    assert not _met(tree)["rows"][0]
    open(path, "w").write(text.replace("other: Other", "other"))  # unknown receiver: counted
    assert _met(tree)["rows"][0]


def test_split_per_entry_scopes_entries_not_files(tree):
    line = _line(tree, "pcp_manager.py", "replace(")
    site = f"{GPU}/pcp_manager.py:{line}"
    fact = fact_record(
        "V2 request count <= max_num_reqs",
        ["padded requests <= max_num_reqs"],
        [f"{GPU}/"],
        [
            path_record(f"{GPU}/model_runner.py:1", "make(so)", "ast", "checked"),
            path_record(site, "replace(batch, num_reqs=...) replace(num_reqs=2 * n)", "executed", "counterexample"),
        ],
        [{"site": site, "deployment": "PCP 2", "values": {}, "reproduced": True}],
    )
    facts = split_by_reach(tree, fact, _entries())
    assert len(facts) == 2
    clean = next(f for f in facts if status(f) == "checked")
    bad = next(f for f in facts if status(f) == "refuted")
    fixed = f"{GPU}/model_states/default.py::ModelState.fixed_rows"
    seq = f"{GPU}/model_states/default.py::ModelState.seq_rows"
    # same file, different verdicts: the scope names entries
    assert in_scope(clean, f"{GPU}/model_states/default.py", fixed)
    assert not in_scope(clean, f"{GPU}/model_states/default.py", seq)
    assert in_scope(bad, f"{GPU}/model_states/default.py", seq)
    assert not in_scope(clean, f"{GPU}/model_states/default.py")  # no file-level scope
    assert clean["reach_entries"][fixed][site].startswith("does not meet")
    assert bad["reach_entries"][seq][site].startswith("meets")
    assert [p["result"] for p in clean["paths"] if p["site"] == site] == ["checked"]


def test_an_element_of_a_one_dimensional_buffer_is_not_the_buffer(tree):
    """``x = self.fixed_rows[i]`` reads an element of a one-dimensional buffer (or a copy): a later
    index with the batch into ``x`` is not a use of the buffer; of a two-dimensional one it is a row
    view, followed."""
    path = f"{tree}/{GPU}/model_states/default.py"
    text = (
        open(path)
        .read()
        .replace("self.fixed_rows[:1] = 3", "row = self.fixed_rows[0]\n        row[: input_batch.num_reqs] = 3")
    )
    open(path, "w").write(text)
    ix = _Index(tree)
    flow = _flow(ix, f"{GPU}/pcp_manager.py", _line(tree, "pcp_manager.py", "replace("))
    one = {**_entries()[3], "shape": ["max_num_reqs"]}
    two = {**_entries()[3], "shape": ["max_num_reqs", "k"]}
    assert not entry_reach(ix, flow, [one])[one["id"]][0]
    assert entry_reach(ix, flow, [two])[two["id"]][0]


# ------------------------------------------------------------------------------------------------
# real tier


@pytest.mark.real
def test_vllm_0_33_the_pcp_local_count_meets_an_entry_it_indexes_and_not_one_indexed_by_slots():
    """On vLLM 0.33.0's source, the PCP local batch (pcp_manager.py:688): its request count is
    followed into the extents and indices of each V2 entry's uses. It meets the target-dependent
    speculator's ``sample_src_positions`` (sliced by the ``num_reqs`` of the batch it is handed,
    the local one on the PCP draft prefill or on a stale state ``_dummy_run`` may read), and none
    of the uses of ``RequestState.max_seq_len`` (indexed by slots) or of the acceptance
    estimator's statistics (kernels given the global batch's slots)."""
    import json
    import os

    from capproof.engines.vllm import wheels
    from capproof.engines.vllm.fact_v2_reach import site_fields

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, f"{GPU}/pcp_manager.py")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    inv = os.path.join(os.path.dirname(__file__), "..", "proofs", "inventory", "vllm-0.33.0.json")
    with open(inv, encoding="utf-8") as fh:
        entries = [e for e in json.load(fh)["entries"] if e["file"].startswith(f"{GPU}/")]
    ix = _Index(root)
    line = _line(root, "pcp_manager.py", "self._local_batch = replace(")
    flow = _flow(ix, f"{GPU}/pcp_manager.py", line)
    # the site's fields that carry the count: the request rows, not the token buffers it slices
    fn = ix.at(f"{GPU}/pcp_manager.py", line)
    fields = site_fields(fn.node, flow.seed)
    assert {"num_reqs", "num_reqs_after_padding", "idx_mapping", "query_start_loc", "seq_lens"} <= fields
    assert not {"num_tokens_after_padding", "prompt_lens", "max_seq_len_np", "dcp_local_seq_lens"} & fields
    met = entry_reach(ix, flow, entries)
    by_name = {k.rsplit("::", 1)[1]: v for k, v in met.items()}
    hit, why = by_name["TargetDependentARSpeculator.sample_src_positions"]
    assert hit and "target_dependent_ar/speculator.py" in why and "may hold the local count" in why
    for name in ("RequestState.max_seq_len", "OnlineAcceptanceEstimator.features"):
        hit, why = by_name[name]
        assert not hit and why.startswith("none of its") and "meets the batch" in why
    clear = sorted(k.rsplit("::", 1)[1] for k, (hit, _why) in met.items() if not hit)
    # the five slot-indexed entries the object-level reading already cleared are still clear
    assert {
        "PPHandler.req_idx_gen_np",
        "PromptLogprobsWorker.num_prompt_logprobs",
        "PromptLogprobsWorker.uses_prompt_logprobs",
        "RequestState.max_seq_len",
        "RequestState.num_computed_prefill_tokens",
    } <= set(clear)
    assert len(clear) >= 17
    assert all(why.startswith(GPU) for hit, why in met.values() if hit)


# ------------------------------------------------------------------------------------------------
# what of the batch is followed: its request count (fields that depend on it), not the object


PRECISE = {
    "pcp_manager.py": """
        from dataclasses import replace
        import numpy as np

        class PCPManager:
            def partition_batch(self, input_batch, buffers):
                segments = self.layout(input_batch)
                num_local_reqs = len(segments)
                idx = np.fromiter((s.req for s in segments), dtype=np.int64, count=num_local_reqs)
                qsl = buffers.query_start_loc_np
                out = qsl[1 : num_local_reqs + 1]
                np.cumsum(idx, out=out)
                tokens = buffers.input_ids[: input_batch.num_tokens]
                return replace(
                    input_batch,
                    num_reqs=num_local_reqs,
                    idx_mapping=idx,
                    query_start_loc_np=qsl,
                    input_ids=tokens,
                    num_tokens_after_padding=input_batch.num_tokens,
                )
    """,
    "model_states/default.py": """
        import torch

        class ModelState:
            def __init__(self, max_num_reqs):
                self.by_count = torch.zeros(max_num_reqs)
                self.by_slots = torch.zeros(max_num_reqs)
                self.by_tokens = torch.zeros(max_num_reqs, 8)
                self.by_padding = torch.zeros(max_num_reqs)
                self.stored = torch.zeros(max_num_reqs)
                self.later = torch.zeros(max_num_reqs)
                self.helper = torch.zeros(max_num_reqs)
                self.kernel = torch.zeros(max_num_reqs)

            def prepare_attn(self, input_batch, slot):
                self.by_count[: input_batch.num_reqs] = 1
                self.by_slots[input_batch.idx_mapping] = 1
                self.by_tokens[:, : input_batch.input_ids.shape[0]] = 0
                self.by_padding[: input_batch.num_tokens_after_padding] = 0
                self.stored[slot] = input_batch.num_reqs
                input_batch.extra = input_batch.num_reqs + 1
                self.later[: input_batch.extra] = 0
                fill(self.helper, input_batch)
                some_kernel[(1,)](self.kernel, input_batch.query_start_loc_np)

        def fill(buf, batch):
            buf[: batch.input_ids.shape[0] // 8] = 0
    """,
    "model_runner.py": """
        class GPUModelRunner:
            def __init__(self):
                self.pcp_manager = PCPManager()
                self.model_state = ModelState(4)

            def execute_model(self, so, slot):
                input_batch = self.pcp_manager.partition_batch(make(so), self.buffers)
                self.model_state.prepare_attn(input_batch, slot)
    """,
}


@pytest.fixture()
def precise(tmp_path):
    for rel, text in PRECISE.items():
        path = tmp_path / GPU / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def _precise_met(root):
    ix = _Index(root)
    flow = _flow(ix, f"{GPU}/pcp_manager.py", _line(root, "pcp_manager.py", "return replace("))
    attrs = ("by_count", "by_slots", "by_tokens", "by_padding", "stored", "later", "helper", "kernel")
    entries = [
        {
            "id": f"{GPU}/model_states/default.py::ModelState.{a}",
            "file": f"{GPU}/model_states/default.py",
            "owner": "ModelState",
            "attribute": a,
            "shape": ["max_num_reqs", "k"] if a == "by_tokens" else ["max_num_reqs"],
        }
        for a in attrs
    ]
    return flow, {k.rsplit(".", 1)[1]: v for k, v in entry_reach(ix, flow, entries).items()}


def test_site_fields_are_those_the_count_reaches_in_the_site(precise):
    """``num_local_reqs = len(segments)``: the count; ``idx`` has it as extent (``count=``),
    ``qsl`` is written through a view of it (``np.cumsum(..., out=out)``); the token slice and the
    step's token count are not derived from it."""
    import ast

    from capproof.engines.vllm.fact_v2_reach import site_fields

    tree = ast.parse(textwrap.dedent(PRECISE["pcp_manager.py"]))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "partition_batch")
    seed = next(n for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "replace")
    assert site_fields(fn, seed) == {"num_reqs", "idx_mapping", "query_start_loc_np"}
    # a keyword the site cannot tell apart (``**``) makes every field followed
    seed.keywords.append(ast.keyword(arg=None, value=ast.Name(id="extra", ctx=ast.Load())))
    assert site_fields(fn, seed) is None


def test_the_count_meets_what_it_indexes_not_what_shares_a_statement_with_the_batch(precise):
    flow, met = _precise_met(precise)
    assert met["by_count"][0] and "input_batch.num_reqs" in met["by_count"][1]
    assert met["by_slots"][0]  # idx_mapping: the local slot array, its extent the count
    assert not met["by_tokens"][0]  # input_ids: the step's tokens, not the local count
    assert not met["by_padding"][0]  # num_tokens_after_padding: not derived from the count
    assert not met["stored"][0]  # the count is the value stored, not the index
    assert met["later"][0]  # a field set on the batch after the site from the count
    assert "extra" in flow.fields
    assert not met["helper"][0]  # followed into fill(): indexed there by the token field only
    assert met["kernel"][0] and "query_start_loc_np" in met["kernel"][1]  # a kernel given the count


def test_the_whole_batch_handed_to_code_outside_counts_as_met(precise):
    """A library or outside call given the buffer and the batch object itself cannot be told."""
    path = f"{precise}/{GPU}/model_states/default.py"
    text = (
        open(path)
        .read()
        .replace(
            "some_kernel[(1,)](self.kernel, input_batch.query_start_loc_np)", "outside(self.by_tokens, input_batch)"
        )
    )
    open(path, "w").write(text)
    _flow_, met = _precise_met(precise)
    assert met["by_tokens"][0] and "input_batch" in met["by_tokens"][1]


def test_a_count_site_follows_the_count_a_call_is_given(precise):
    """A path that sets the count through a call other than ``replace`` (``make_dummy(n)``): the
    values bound to the names it is given are followed, not the object."""
    path = f"{precise}/{GPU}/model_runner.py"
    text = open(path).read() + textwrap.dedent("""
        def dummy_sampler(self, hidden):
            n = hidden.shape[0]
            batch = make_dummy(n, self.buffers)
            self.model_state.prepare_attn(batch, 0)
    """).replace("\ndef ", "\n    def ").replace("\n    ", "\n        ").replace("\n        def", "\n    def")
    open(path, "w").write(text)
    ix = _Index(precise)
    flow = _flow(ix, f"{GPU}/model_runner.py", _line(precise, "model_runner.py", "make_dummy("), "make_dummy")
    assert flow is not None
    default = f"{GPU}/model_states/default.py"
    assert any(f.rel == default for f in flow.entered.values())  # the dummy batch (a value of n) goes on


def test_a_path_given_another_sites_count_is_checked_where_that_site_meets_nothing(precise):
    """A path that holds given the count of another unchecked site (``given``) is checked for the
    entries that site's count does not meet, and stays unchecked where it does."""
    line = _line(precise, "pcp_manager.py", "return replace(")
    site = f"{GPU}/pcp_manager.py:{line}"
    dep = path_record(f"{GPU}/input_batch.py:9", "InputBatch(num_reqs=num_reqs)", "ast", "not checked", "via the site")
    dep["given"] = site
    fact = fact_record(
        "V2 request count <= max_num_reqs",
        ["padded requests <= max_num_reqs"],
        [f"{GPU}/"],
        [
            path_record(f"{GPU}/model_runner.py:1", "make(so)", "ast", "checked"),
            path_record(site, "replace(batch, num_reqs=...) replace(num_reqs=n)", "ast", "not checked"),
            dep,
        ],
    )
    entries = [
        {
            "id": f"{GPU}/model_states/default.py::ModelState.{a}",
            "file": f"{GPU}/model_states/default.py",
            "owner": "ModelState",
            "attribute": a,
            "shape": ["max_num_reqs"],
        }
        for a in ("by_count", "stored")
    ]
    facts = split_by_reach(precise, fact, entries)
    clean = next(f for f in facts if status(f) == "checked")
    bad = next(f for f in facts if status(f) != "checked")
    assert clean["scope"] == [entries[1]["id"]] and bad["scope"] == [entries[0]["id"]]
    assert [p["result"] for p in clean["paths"] if p["site"] == dep["site"]] == ["checked"]
    assert [p["result"] for p in bad["paths"] if p["site"] == dep["site"]] == ["not checked"]


def test_a_counter_a_loop_runs_by_the_count_holds_the_count(precise):
    """``while i < input_batch.num_reqs: ...; i += 1``: ``i`` is bounded by the count through the
    loop's condition, not a value computed from it; it is followed as one."""
    path = f"{precise}/{GPU}/model_states/default.py"
    text = (
        open(path)
        .read()
        .replace(
            "        fill(self.helper, input_batch)\n",
            "        i = 0\n        while i < input_batch.num_reqs:\n            self.helper[i] = 0\n            i += 1\n",
        )
    )
    open(path, "w").write(text)
    _flow_, met = _precise_met(precise)
    assert met["helper"][0] and "indexed by i" in met["helper"][1]
