"""The V2 runner's token fact (capproof/engines/vllm/fact_tokens_v2.py): capture sizes read from
the source, candidates and dispatch run on symbolic sizes.

Fast tests read small source trees (AST); the real tier runs vLLM 0.33.0's own code."""

import ast
import textwrap

import pytest

from capproof.engines.tracing.accesses import parent_map
from capproof.engines.vllm import fact_tokens_v2 as v2

# The shape of vLLM 0.33.0's VllmConfig._set_cudagraph_sizes (vllm/config/vllm.py), cut down.
SIZES = """
class VllmConfig:
    def _set_cudagraph_sizes(self):
        if self.cudagraph_on:
            max_cudagraph_capture_size = self.compilation_config.max_cudagraph_capture_size
            uniform_decode_sizes = []
            if max_cudagraph_capture_size is None:
                max_cudagraph_capture_size = min(self.max_num_seqs * 2, 512)
                uniform_decode_sizes = sorted({n for n in self.counts if n <= max_cudagraph_capture_size})
            max_num_tokens = self.scheduler_config.max_num_batched_tokens
            max_cudagraph_capture_size = min(max_num_tokens, max_cudagraph_capture_size)
            if self.compilation_config.cudagraph_capture_sizes is not None:
                dedup_sizes = list(set(self.compilation_config.cudagraph_capture_sizes))
                cudagraph_capture_sizes = [i for i in dedup_sizes if i <= max_num_tokens]
            else:
                cudagraph_capture_sizes = [i for i in [1, 2, 4] if i <= max_cudagraph_capture_size]
                cudagraph_capture_sizes += list(range(8, min(max_cudagraph_capture_size + 1, 256), 8))
                if max_num_tokens <= max_cudagraph_capture_size and max_num_tokens not in cudagraph_capture_sizes:
                    cudagraph_capture_sizes.append(max_num_tokens)
                cudagraph_capture_sizes += [size for size in uniform_decode_sizes if size <= max_num_tokens]
                cudagraph_capture_sizes = sorted(set(cudagraph_capture_sizes))
            valid_max_size = cudagraph_capture_sizes[-1] if cudagraph_capture_sizes else 0
            self.compilation_config.max_cudagraph_capture_size = valid_max_size
            self.compilation_config.cudagraph_capture_sizes = cudagraph_capture_sizes
        else:
            self.compilation_config.max_cudagraph_capture_size = 0
            self.compilation_config.cudagraph_capture_sizes = []
"""

ADJUST = """
class CompilationConfig:
    def adjust_cudagraph_sizes_for_spec_decode(self, multiple_of):
        rounded_sizes = sorted(
            set(round_up(s, multiple_of) for s in self.cudagraph_capture_sizes
                if round_up(s, multiple_of) <= self.max_cudagraph_capture_size)
        )
        if len(rounded_sizes) == 0 and multiple_of <= self.max_cudagraph_capture_size:
            rounded_sizes = [multiple_of]
        self.max_cudagraph_capture_size = rounded_sizes[-1]
        self.cudagraph_capture_sizes = rounded_sizes
"""

REPLAY = """
class DecoderReplayCudaGraphManager:
    def __init__(self, compilation, scheduler, sizes):
        sizes = sorted(set(sizes))
        if max(sizes) > scheduler.max_num_batched_tokens:
            raise ValueError("too large")
        compilation.cudagraph_capture_sizes = sizes
        compilation.max_cudagraph_capture_size = max(sizes)
"""


def _judge(text: str) -> dict[int, str]:
    tree = ast.parse(textwrap.dedent(text))
    parents = parent_map(tree)
    return {n.lineno: v2.judge_capture_size_write(tree, n, parents)[0] for n in v2._size_writes(tree)}


def test_set_cudagraph_sizes_shape_is_bounded_by_the_budget():
    got = _judge(SIZES)
    assert list(got.values()) == ["checked"] * 4


@pytest.mark.parametrize(
    "old, new",
    [
        # the cap by the budget removed: the default maximum (512) may exceed it
        ("max_cudagraph_capture_size = min(max_num_tokens, max_cudagraph_capture_size)", "pass"),
        # user sizes not filtered
        ("[i for i in dedup_sizes if i <= max_num_tokens]", "dedup_sizes"),
        # a size one past the budget appended
        ("cudagraph_capture_sizes.append(max_num_tokens)", "cudagraph_capture_sizes.append(max_num_tokens + 1)"),
        # a range past the cap
        ("min(max_cudagraph_capture_size + 1, 256)", "min(max_cudagraph_capture_size + 9, 256)"),
        # uniform decode sizes not filtered by the budget
        ("[size for size in uniform_decode_sizes if size <= max_num_tokens]", "uniform_decode_sizes"),
    ],
)
def test_set_cudagraph_sizes_without_a_bound_is_not_checked(old, new):
    assert old in SIZES
    got = _judge(SIZES.replace(old, new))
    # the two writes of the real sizes are no longer bounded; the constant ones still are
    assert sorted(got.values()) == ["checked", "checked", "not checked", "not checked"]


def test_adjust_for_spec_decode_only_shrinks_the_sizes():
    assert set(_judge(ADJUST).values()) == {"checked"}
    unguarded = ADJUST.replace(" and multiple_of <= self.max_cudagraph_capture_size", "")
    assert set(_judge(unguarded).values()) == {"not checked"}


def test_a_manager_raising_above_the_budget_is_checked():
    assert set(_judge(REPLAY).values()) == {"checked"}
    assert set(_judge(REPLAY.replace("raise ValueError", "print")).values()) == {"not checked"}


def _tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_speculator_sites_check_only_the_targets_padded_count(tmp_path):
    root = _tree(
        tmp_path,
        {
            v2.SPECULATORS + "a/speculator.py": """
                def propose(self, input_batch, num_reqs):
                    d, s = dispatch_cg_and_sync_dp(self.m, num_reqs, input_batch.num_tokens_after_padding, None)
            """,
            v2.SPECULATORS + "b/speculator.py": """
                def propose(self, num_reqs):
                    d, s = dispatch_cg_and_sync_dp(self.m, num_reqs, num_reqs * 16, None)
            """,
        },
    )
    got = [(p["site"], p["result"]) for p in v2.speculator_sites(root)]
    assert got == [
        (v2.SPECULATORS + "a/speculator.py:3", "checked"),
        (v2.SPECULATORS + "b/speculator.py:3", "not checked"),
    ]


DUMMY = """
class GPUModelRunner:
    def __init__(self):
        self.max_num_tokens = self.scheduler_config.max_num_batched_tokens

    def _dummy_run(self, num_tokens):
        assert num_tokens <= self.max_num_tokens
        dummy_scheduler_output.total_num_scheduled_tokens = num_tokens
"""


def test_dummy_run_count_checked_by_its_assert(tmp_path):
    assert v2._dummy_assert(_tree(tmp_path / "a", {v2.V2_RUNNER: DUMMY}))["result"] == "checked"
    late = DUMMY.replace(
        "        dummy_scheduler_output", "        num_tokens = num_tokens * 2\n        dummy_scheduler_output"
    )
    assert v2._dummy_assert(_tree(tmp_path / "b", {v2.V2_RUNNER: late}))["result"] == "not checked"


def test_all_reduce_stand_in_rows_are_elementwise():
    t = v2._Table(2, 2)
    t[0][0] = 5
    t[1][0] = 7
    assert list(t[0]) == [5, 0]
    assert (t[0] == 5) == [True, False]  # per-rank comparisons, as on a tensor
    t[:] = t[:, 0, None].clone()
    assert list(t[0]) == [5, 5] and list(t[1]) == [7, 7]
    row = v2._Row([1, 2])
    row[:] = 9
    assert list(row) == [9, 9]


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
def test_real_capture_sizes_bounded_at_every_write(vllm_root):
    paths = v2.capture_size_sites(vllm_root)
    sites = {p["site"] for p in paths}
    for site in ("vllm/config/vllm.py:2631", "vllm/config/vllm.py:2648", "vllm/config/compilation.py:1565"):
        assert site in sites
    assert [p for p in paths if p["result"] != "checked"] == []


@pytest.mark.real
def test_real_candidates_within_the_capture_sizes(vllm_root):
    rec = v2.candidate_tokens(vllm_root)
    assert rec["result"] == "checked", rec["why"]
    assert rec["how"] == "executed"


@pytest.mark.real
def test_real_dispatch_and_dp_sync_within_the_ranks_counts_and_candidates(vllm_root):
    rec = v2.dispatch_tokens()
    assert rec["result"] == "checked", rec["why"]


@pytest.mark.real
def test_real_runner_counts_checked_and_three_speculator_dispatches_not(vllm_root):
    assert [p["site"] for p in v2.runner_counts(vllm_root) if p["result"] != "checked"] == []
    open_sites = [p["site"] for p in v2.speculator_sites(vllm_root) if p["result"] != "checked"]
    assert open_sites == [
        "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py:565",
        "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py:258",
        "vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py:334",
    ]


def test_a_config_built_with_a_capture_size_keyword_is_a_path_not_checked(tmp_path):
    root = _tree(
        tmp_path,
        {
            "vllm/config/vllm.py": "",
            "vllm/x.py": """
                def make(n):
                    return CompilationConfig(cudagraph_capture_sizes=[n])
            """,
        },
    )
    got = [(p["site"], p["result"]) for p in v2.capture_size_sites(root)]
    assert got == [("vllm/x.py:3", "not checked")]
