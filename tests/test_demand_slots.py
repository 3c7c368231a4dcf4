"""The V2 runner's request-slot invariant and slot-indexed rows, read from a small engine tree."""

import ast
import os
import textwrap

from capproof.engines.vllm import demand_slots as ds
from capproof.engines.vllm.demand_v2_requests import derive_slot_rows
from capproof.inventory import Entry

STATES = """
class RequestState:
    def __init__(self, max_num_reqs):
        self.max_num_reqs = max_num_reqs
        self.req_id_to_index: dict[str, int] = {}
        self.free_indices = list(range(max_num_reqs))
        self.prompt_len = UvaBackedTensor(self.max_num_reqs)

    def add_request(self, req_id, prompt_len):
        req_idx = self.free_indices.pop()
        self.req_id_to_index[req_id] = req_idx
        self.prompt_len.np[req_idx] = prompt_len

    def remove_request(self, req_id):
        req_idx = self.req_id_to_index.pop(req_id, None)
        if req_idx is None:
            return None
        self.free_indices.append(req_idx)
        return req_idx
"""

RUNNER = """
class GPUModelRunner:
    def __init__(self):
        self.max_num_reqs = self.scheduler_config.max_num_seqs
        self.req_states = RequestState(max_num_reqs=self.max_num_reqs)

    def update(self, req_id):
        req_index = self.req_states.req_id_to_index[req_id]
        self.touch(req_index)

    def touch(self, i):
        self.req_states.prompt_len.np[i] = 0
"""


def _tree(tmp_path, runner=RUNNER):
    base = tmp_path / "vllm" / "v1" / "worker" / "gpu"
    os.makedirs(base)
    (base / "states.py").write_text(textwrap.dedent(STATES))
    (base / "model_runner.py").write_text(textwrap.dedent(runner))
    ds.parsed_files.cache_clear()
    return str(tmp_path)


def _entry():
    return Entry(
        id="vllm/v1/worker/gpu/states.py::RequestState.prompt_len",
        file="vllm/v1/worker/gpu/states.py",
        line=7,
        owner="RequestState",
        attribute="prompt_len",
        dtype="int32",
        shape=["max_num_reqs"],
    )


def test_slot_fact_checked_and_rows_derived_through_every_call_site(tmp_path):
    root = _tree(tmp_path)
    fact = ds.slot_fact(root)
    assert fact["checked"], fact["paths"]["not checked"]
    e = _entry()
    assert derive_slot_rows([e], root, requests_fact={"checked": False, "paths": {}}) == [e.id]
    assert e.demands[0]["extent"] == "max_num_reqs" and e.demands[0]["facts"][0]["checked"]
    # the parameter `i` of touch() is a slot because its one call site passes req_id_to_index[...]
    assert any("[i] in touch (a slot)" in s for s in e.demands[0]["from"])


def test_another_writer_of_the_slot_map_breaks_the_fact_and_a_count_index_is_refused(tmp_path):
    bad = RUNNER + textwrap.indent(
        textwrap.dedent("""
        def hack(self, req_id, n):
            self.req_states.req_id_to_index[req_id] = n
            self.touch(n)
        """),
        "    ",
    )
    root = _tree(tmp_path, bad)
    fact = ds.slot_fact(root)
    assert not fact["checked"]
    assert any("req_id_to_index[req_id]" in p for p in fact["paths"]["not checked"])
    e, reasons = _entry(), {}
    assert derive_slot_rows([e], root, requests_fact={"checked": False, "paths": {}}, reasons=reasons) == []
    assert not e.demands
    # the reason names the call site whose argument is not a slot: hack() passes its own `n`
    assert reasons[e.id].endswith("index i is not a slot (via vllm/v1/worker/gpu/model_runner.py:16 touch(i=n))")


def _real_root():
    import pytest

    from capproof.engines.vllm import wheels

    root = wheels.source_root("vllm", "0.33.0")
    if not os.path.exists(os.path.join(root, "vllm/v1/worker/gpu/states.py")):
        pytest.skip("vLLM 0.33.0 sources not extracted (make real-install)")
    ds.parsed_files.cache_clear()
    return root


import pytest  # noqa: E402


@pytest.mark.real
def test_vllm_0_33_slot_invariant_holds_and_the_request_count_fact_names_its_unchecked_paths():
    """On vLLM 0.33.0 the slot invariant is checked; the V2 request-count fact is not, and the
    paths it is not checked on are exactly these (batch sharding, PCP, micro-batching, the
    decode warm-up's dict). The dummy sampler run and the dummy batch it sizes are checked: its
    zero-token return ends at ``_dummy_run``'s assert (no state pending at a profile run)."""
    from capproof.engines.vllm.demand_v2_requests import v2_requests_fact

    root = _real_root()
    assert ds.slot_fact(root)["checked"]
    fact = v2_requests_fact(root)
    assert not fact["checked"]
    where = sorted(p.split(" ")[0] for p in fact["paths"]["not checked"])
    assert where == [
        "vllm/v1/worker/gpu/pcp_manager.py:688",
        "vllm/v1/worker/gpu/sample/batch_shard.py:284",
        "vllm/v1/worker/gpu/ubatch_utils.py:163",
        "vllm/v1/worker/gpu/ubatch_utils.py:163",
        "vllm/v1/worker/gpu/warmup.py:431",
    ]
    assert len(fact["paths"]["checked (ast)"]) >= 25
    # the dummy sampler run's count holds: execute_model's zero-token return is taken by a dummy
    # run, but no state is pending when a profile run starts (fact_v2_profile_state)
    dummy = next(p for p in fact["paths"]["checked (ast)"] if p.startswith("vllm/v1/worker/gpu/model_runner.py:996"))
    assert "zero-token return (:1853)" in dummy and "no state is pending when a profile run starts" in dummy
    # taken as reading its own state, the chain holds, and so do the dummy batches it sizes
    own = v2_requests_fact(root, own_state=True)
    assert not any(
        p.startswith(("vllm/v1/worker/gpu/model_runner.py:996", "vllm/v1/worker/gpu/input_batch.py"))
        for p in own["paths"]["not checked"]
    )


@pytest.mark.real
@pytest.mark.parametrize(
    "file, old, new, refusal",
    [
        (
            "input_batch.py",
            "logits_indices = query_start_loc[1:] - 1",
            "logits_indices = input_buffers.positions[:num_tokens]",
            "logits_indices is not query_start_loc",
        ),
        (
            "model_runner.py",
            "sample_hidden_states = hidden_states[input_batch.logits_indices]",
            "sample_hidden_states = hidden_states",
            "sample_hidden_states is not",
        ),
    ],
)
def test_dummy_sampler_rows_refuse_a_broken_link(tmp_path, file, old, new, refusal):
    """The dummy sampler run's row bound is a chain read in the source: one changed link (the dummy
    batch's logits indices, the rows ``_dummy_run`` hands back) and it is refused."""
    import shutil

    from capproof.engines.vllm.demand_v2_requests import CountJudge, dummy_sampler_rows

    root = _real_root()
    assert dummy_sampler_rows(CountJudge(root, True)) is None  # through fact_v2_profile_state
    assert dummy_sampler_rows(CountJudge(root, True, own_state=True)) is None
    shutil.copytree(os.path.join(root, "vllm/v1/worker"), tmp_path / "vllm/v1/worker")
    path = tmp_path / "vllm/v1/worker/gpu" / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    ds.parsed_files.cache_clear()
    try:
        why = dummy_sampler_rows(CountJudge(str(tmp_path), True, own_state=True))
    finally:
        ds.parsed_files.cache_clear()
    assert why is not None and refusal in why


@pytest.mark.real
def test_dummy_sampler_rows_hold_without_the_early_return(tmp_path):
    """The chain is refused only for ``execute_model``'s return before it stores its state
    (``batch_desc.num_tokens == 0``, :1851-1853): with that return gone, it holds."""
    import shutil

    from capproof.engines.vllm.demand_v2_requests import CountJudge, dummy_sampler_rows

    root = _real_root()
    shutil.copytree(os.path.join(root, "vllm/v1/worker"), tmp_path / "vllm/v1/worker")
    path = tmp_path / "vllm/v1/worker/gpu/model_runner.py"
    old = "            return self._merge_ec_connector_no_forward(scheduler_output, empty_output)\n"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, "            pass\n"))
    ds.parsed_files.cache_clear()
    try:
        assert dummy_sampler_rows(CountJudge(str(tmp_path), True)) is None
    finally:
        ds.parsed_files.cache_clear()


SPECULATOR = """
import torch


class Speculator:
    def __init__(self, max_num_reqs):
        self.idx_mapping = torch.zeros(max_num_reqs, dtype=torch.int64)

    def copy_inputs(self, num_reqs, idx_mapping, dummy_run=False):
        if dummy_run:
            self.idx_mapping.fill_(-1)
        else:
            self.idx_mapping[:num_reqs].copy_(idx_mapping)
            self.idx_mapping[num_reqs:].fill_(-1)

    def propose(self, input_batch, num_reqs):
        self.copy_inputs(num_reqs, {arg})
"""


def _slot_array_tree(tmp_path, arg="input_batch.idx_mapping", extra=""):
    root = _tree(tmp_path)
    base = tmp_path / "vllm" / "v1" / "worker" / "gpu"
    (base / "speculator.py").write_text(textwrap.dedent(SPECULATOR.format(arg=arg)) + textwrap.dedent(extra))
    ds.parsed_files.cache_clear()
    return root


def _not_checked(fact):
    return [
        p.split(" ")[0].rsplit("/", 1)[-1] + " " + p.split(" (")[0].split(" ", 1)[1]
        for p in fact["paths"]["not checked"]
    ]


def test_in_place_writes_of_a_slot_array_are_paths_of_the_fact(tmp_path):
    """``torch.zeros``, ``fill_(-1)`` and ``copy_`` of the batch's slot array (the parameter judged
    at its one call site) are checked; a copy of something else, an in-place add and an
    augmented assignment are not."""
    fact = ds.slot_array_fact(_slot_array_tree(tmp_path), None)
    assert fact["checked"], fact["paths"]["not checked"]
    assert any("in-place copy_ of self.idx_mapping from idx_mapping" in p for p in fact["paths"]["checked (ast)"])

    fact = ds.slot_array_fact(_slot_array_tree(tmp_path / "b", arg="torch.arange(num_reqs)"), None)
    assert _not_checked(fact) == ["speculator.py:13 in-place copy_ of self.idx_mapping from idx_mapping"]

    extra = """
    def bump(self):
        self.idx_mapping.add_(1)
        self.idx_mapping += 1
    """
    fact = ds.slot_array_fact(_slot_array_tree(tmp_path / "c", extra=textwrap.indent(extra, "    ")), None)
    assert sorted(p.split(" (")[0] for p in _not_checked(fact)) == [
        "speculator.py:20 in-place add_ of self.idx_mapping",
        "speculator.py:21 in-place augmented assignment of self.idx_mapping",
    ]


def test_a_kernel_filled_slot_array_is_judged_by_the_run_that_executed_it(tmp_path):
    """``new_empty`` filled by a kernel is no slot array in the source; the store is checked only
    through ``executed`` (the engine's code run), keyed by the line that makes the tensor."""
    extra = """
    def shard(input_batch, n):
        local = input_batch.idx_mapping.new_empty(n)
        return replace(input_batch, idx_mapping=local)
    """
    root = _slot_array_tree(tmp_path, extra=extra)
    fact = ds.slot_array_fact(root, None)
    assert _not_checked(fact) == ["speculator.py:21 local"]
    ran = {"vllm/v1/worker/gpu/speculator.py:20": (True, "executed (concrete): every element stored")}
    fact = ds.slot_array_fact(root, None, ran)
    assert fact["checked"]
    assert any(
        p.startswith("vllm/v1/worker/gpu/speculator.py:21 local (executed") for p in fact["paths"]["checked (ast)"]
    )
    failed = {"vllm/v1/worker/gpu/speculator.py:20": (False, "executed (concrete): 1 of 4 runs failed")}
    assert not ds.slot_array_fact(root, None, failed)["checked"]


def test_the_slot_remove_request_frees_is_a_slot(tmp_path):
    """``req_idx = self.req_states.remove_request(req_id)`` is a slot (or None): every return of
    ``remove_request`` is ``None`` or the value popped from ``req_id_to_index``."""
    runner = RUNNER + textwrap.indent(
        textwrap.dedent("""
        def finish(self, req_id):
            req_idx = self.req_states.remove_request(req_id)
            if req_idx is None:
                return
            self.touch(req_idx)
        """),
        "    ",
    )
    root = _tree(tmp_path, runner)
    e = _entry()
    assert derive_slot_rows([e], root, requests_fact={"checked": False, "paths": {}}) == [e.id]
    bad = STATES.replace("        return req_idx\n", "        return req_idx + 1\n")
    assert bad != STATES
    base = tmp_path / "b"
    root = _tree(base, runner)
    (base / "vllm/v1/worker/gpu/states.py").write_text(textwrap.dedent(bad))
    ds.parsed_files.cache_clear()
    e, reasons = _entry(), {}
    assert derive_slot_rows([e], root, requests_fact={"checked": False, "paths": {}}, reasons=reasons) == []
    assert "index i is not a slot" in reasons[e.id]


def test_call_sites_that_cannot_bind_or_belong_to_an_unrelated_class_are_not_the_methods(tmp_path):
    """A slot parameter is judged at every call site of its method; a call that leaves a required
    parameter unbound (Python raises before the body runs) and a ``super()`` call in a class with
    no inheritance link to the owner are not call sites of it, so their arguments do not count."""
    runner = RUNNER + textwrap.dedent(
        """
        class Base:
            def touch(self, i):
                pass

        class Other(Base):
            def touch(self, i):
                super().touch(self.num_tokens)

        def also(obj, n):
            obj.touch()  # no argument for i: not a call of GPUModelRunner.touch
        """
    )
    root = _tree(tmp_path, runner)
    slots = ds.SlotJudge(root, arrays_ok=False)
    rel, tree, parents = next(f for f in slots.files if f[0].endswith("model_runner.py"))
    fn = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "touch" and ds.class_of(parents, n) == "GPUModelRunner"
    )
    assert slots.scalar(rel, parents, fn, ast.Name(id="i", ctx=ast.Load()))
    assert not ds._binds(fn, True, ast.parse("obj.touch()").body[0].value)
    assert ds._binds(fn, True, ast.parse("obj.touch(1)").body[0].value)
    assert ds._binds(fn, True, ast.parse("GPUModelRunner.touch(obj, 1)").body[0].value)  # self explicit
    # the same super() call from a subclass of the owner is one of its call sites: refused
    root = _tree(tmp_path / "b", runner.replace("class Base:", "class Base(GPUModelRunner):"))
    slots = ds.SlotJudge(root, arrays_ok=False)
    rel, tree, parents = next(f for f in slots.files if f[0].endswith("model_runner.py"))
    fn = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "touch" and ds.class_of(parents, n) == "GPUModelRunner"
    )
    assert not slots.scalar(rel, parents, fn, ast.Name(id="i", ctx=ast.Load()))
