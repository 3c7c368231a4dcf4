"""The DP-gather fact's eager-only link (capproof/engines/sglang/demand.py, ``eager_only_sync``) on
small source trees laid out as SGLang's (``sglang/srt/...``): ``ForwardBatch.prepare_mlp_sync_batch``
called only by ``ModelRunner._prepare_eager_forward_batch`` after a returning CUDA-graph branch is
off the graph path; any other caller, or the eager call before the graph branch, is named."""

from __future__ import annotations

import textwrap

from capproof.engines.sglang.demand import MODEL_RUNNER, eager_only_sync

FORWARD_BATCH = """
class ForwardBatch:
    def prepare_mlp_sync_batch(self, model_runner):
        self.batch_size = 1
"""

MODEL_RUNNER_SRC = """
class ModelRunner:
    def _prepare_eager_forward_batch(self, forward_batch):
        if forward_batch.global_num_tokens_cpu is not None:
            forward_batch.prepare_mlp_sync_batch(self)

    def _forward_raw(self, forward_batch, can_run_graph):
        if can_run_graph:
            ret = self.decode_cuda_graph_runner.execute(forward_batch)
            return ret
        self._prepare_eager_forward_batch(forward_batch)
        return self.model.forward(forward_batch)
"""

DP_ADAPTER = """
class DPAttnAdapter:
    def prepare_mlp_sync_batch(self, local_batch):
        return local_batch

    def maybe_prepare_mlp_sync_batch(self, batch):
        return self.prepare_mlp_sync_batch(batch)
"""


def _tree(tmp_path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def _layout(**over) -> dict[str, str]:
    files = {
        "sglang/srt/model_executor/forward_batch_info.py": FORWARD_BATCH,
        MODEL_RUNNER: MODEL_RUNNER_SRC,
        "sglang/srt/managers/scheduler_components/dp_attn.py": DP_ADAPTER,
    }
    files.update(over)
    return files


def test_the_eager_only_call_after_the_graph_branch_is_checked(tmp_path):
    assert eager_only_sync(_tree(tmp_path, _layout())) == ""


def test_a_graph_runner_calling_the_sync_is_named(tmp_path):
    runner = """
    class DraftRunner:
        def execute(self, forward_batch):
            forward_batch.prepare_mlp_sync_batch(self.model_runner)
            return forward_batch.batch_size
    """
    out = eager_only_sync(_tree(tmp_path, _layout(**{"sglang/srt/speculative/draft_runner.py": runner})))
    assert out.startswith("sglang/srt/speculative/draft_runner.py:4 DraftRunner.execute calls forward_batch"), out


def test_the_eager_call_before_the_graph_branch_is_named(tmp_path):
    before = MODEL_RUNNER_SRC.replace(
        """        if can_run_graph:
            ret = self.decode_cuda_graph_runner.execute(forward_batch)
            return ret
        self._prepare_eager_forward_batch(forward_batch)""",
        """        self._prepare_eager_forward_batch(forward_batch)
        if can_run_graph:
            ret = self.decode_cuda_graph_runner.execute(forward_batch)
            return ret""",
    )
    assert before != MODEL_RUNNER_SRC
    out = eager_only_sync(_tree(tmp_path, _layout(**{MODEL_RUNNER: before})))
    assert "not after a returning graph branch" in out and "_forward_raw" in out, out


def test_a_graph_branch_that_does_not_return_is_no_guard(tmp_path):
    falls_through = MODEL_RUNNER_SRC.replace("            return ret\n", "            pass\n")
    assert falls_through != MODEL_RUNNER_SRC
    out = eager_only_sync(_tree(tmp_path, _layout(**{MODEL_RUNNER: falls_through})))
    assert "not after a returning graph branch" in out, out


def test_hardware_backend_files_are_not_read(tmp_path):
    npu = """
    class NPURunner:
        def execute(self, forward_batch):
            forward_batch.prepare_mlp_sync_batch(self)
    """
    root = _tree(tmp_path, _layout(**{"sglang/srt/hardware_backend/npu/runner.py": npu}))
    assert eager_only_sync(root) == ""
