"""The DFlash/DSpark query-pass token count (capproof/engines/vllm/fact_tokens_dflash.py): the
admission cap read from the source, the drafter's capture run on symbolic sizes, the target's
post-capture dummy runs run through vLLM's code (a counterexample, finding 11).

Fast tests read small source trees (AST); the real tier runs vLLM 0.33.0's own code."""

import os
import textwrap

import pytest

from capproof.engines.vllm import fact_tokens_dflash as fd

# The shapes of vLLM 0.33.0's sites, cut down (config/vllm.py:2377-2396, scheduler.py:131-138,
# 1062-1074, 1549, gpu/model_runner.py:1409, gpu_model_runner.py:2529-2537).
CONFIG = """
class VllmConfig:
    def _post(self, max_num_batched_tokens):
        spec = self.speculative_config
        if spec.use_dflash() or spec.use_dspark():
            max_num_active_seqs = self.scheduler_config.max_num_active_seqs or self.scheduler_config.max_num_seqs
            max_draft_seqs = max_num_batched_tokens // self.num_lookahead_tokens
            if max_draft_seqs < max_num_active_seqs:
                self.scheduler_config.max_num_active_seqs = max_draft_seqs
"""

SCHEDULER = """
class Scheduler:
    def __init__(self):
        self.running = []
        self.max_num_running_reqs = self.scheduler_config.max_num_seqs
        self.max_num_active_reqs = (
            self.scheduler_config.max_num_active_seqs
            if self.scheduler_config.max_num_active_seqs is not None
            else self.max_num_running_reqs
        )

    def schedule(self):
        while token_budget > 0:
            num_running = len(self.running) + self.num_waiting_for_streaming_input
            if num_running >= self.max_num_active_reqs:
                break
            request = self.waiting.pop_request()
            self.running.append(request)
        self.running = remove_all(self.running, stopped)
"""

V2 = """
class GPUModelRunner:
    def prepare_inputs(self, req_ids):
        num_reqs = len(req_ids)
"""

V1 = """
class GPUModelRunner:
    def _build(self, num_tokens, num_reqs):
        spec_decode_common_attn_metadata = spec_decode_common_attn_metadata.unpadded(num_tokens, num_reqs)
"""


def _tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path)


PROPOSER = """
class DFlashProposer:
    def set_inputs_first_pass(self, cad):
        batch_size = cad.batch_size()
        num_query_per_req = 1 + self.num_speculative_tokens
"""


def _root(tmp_path, scheduler=SCHEDULER, config=CONFIG, proposer=PROPOSER):
    return _tree(
        tmp_path,
        {
            fd.VLLM_CONFIG: config,
            fd.SCHEDULER: scheduler,
            fd.V2_RUNNER: V2,
            fd.V1_RUNNER: V1,
            fd.DFLASH_V1: proposer,
        },
    )


def test_query_rows_per_method_and_layout():
    assert fd.query_rows("dflash", 7, False, ["1+self.num_speculative_steps"]) == 8
    both = ["self.num_speculative_steps", "1+self.num_speculative_steps"]
    assert fd.query_rows("dspark", 7, True, both) == 7
    assert fd.query_rows("dspark", 7, False, both) == 8
    with pytest.raises(ValueError, match="not read"):
        fd.query_rows("dflash", 7, False, ["2*self.num_speculative_steps"])


def test_a_real_step_is_checked_by_the_admission_cap(tmp_path):
    paths = fd.admission_path(_root(tmp_path))
    assert [(p["site"], p["result"]) for p in paths] == [
        (fd.DFLASH_V2 + ":463", "checked"),
        (fd.DFLASH_V1 + ":124-127", "checked"),
    ]
    assert "scheduler.py:14,15,18,6" in paths[0]["why"]


@pytest.mark.parametrize(
    "old, new",
    [
        # the request joins RUNNING before the cap is tested
        (
            "            num_running = len(self.running)",
            "            self.running.append(request)\n            num_running = len(self.running)",
        ),
        # a second way into RUNNING
        (
            "        self.running = remove_all(",
            "        self.running = self.running + resumed\n        self.running = remove_all(",
        ),
        # the cap tested against the slot count, not the admission cap
        ("if num_running >= self.max_num_active_reqs:", "if num_running >= self.max_num_running_reqs:"),
    ],
)
def test_admission_without_the_guard_is_not_checked(tmp_path, old, new):
    assert old in SCHEDULER
    paths = fd.admission_path(_root(tmp_path, scheduler=SCHEDULER.replace(old, new)))
    assert {p["result"] for p in paths} == {"not checked"}


def test_v1_query_rows_other_than_one_plus_k_are_not_checked(tmp_path):
    proposer = PROPOSER.replace("1 + self.num_speculative_tokens", "2 + self.num_speculative_tokens")
    paths = fd.admission_path(_root(tmp_path, proposer=proposer))
    assert [p["result"] for p in paths] == ["checked", "not checked"]


def test_without_the_dflash_override_a_real_step_is_not_checked(tmp_path):
    config = CONFIG.replace("max_num_batched_tokens // self.num_lookahead_tokens", "max_num_batched_tokens")
    paths = fd.admission_path(_root(tmp_path, config=config))
    assert {p["result"] for p in paths} == {"not checked"}
    assert "override not found" in paths[0]["why"]


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
def test_real_lookahead_and_admission_checked(vllm_root):
    rec = fd.lookahead_path(vllm_root)
    assert rec["result"] == "checked", rec["why"]
    assert rec["why"].startswith("128 cases")
    assert [p["result"] for p in fd.admission_path(vllm_root)] == ["checked", "checked"]


@pytest.mark.real
def test_real_drafter_capture_within_the_capture_size(vllm_root):
    rec = fd.capture_path(vllm_root)
    assert rec["result"] == "checked", rec["why"]
    assert rec["how"] == "executed"


@pytest.mark.real
def test_real_post_capture_dummy_run_exceeds_the_budget(vllm_root):
    """Finding 11, through vLLM's _dummy_run, gather_batch_req_state, _init_candidates and
    dispatch_cg_and_sync_dp: DSpark K=8, max_num_seqs 256, max_num_batched_tokens 1024."""
    from vllm.config.compilation import CUDAGraphMode

    from capproof.engines.vllm.fact_tokens import vllm_capture_sizes

    sizes = vllm_capture_sizes(256, 8, 1024)
    for mode in (CUDAGraphMode.FULL, CUDAGraphMode.FULL_AND_PIECEWISE):
        hit = fd.dummy_query_rows(*sizes, 256, 1024, 8, 8, mode, varlen=True)
        assert hit == {
            "capture_size": 135,
            "num_reqs": 128,
            "num_tokens": 135,
            "desc_num_reqs": 135,
            "desc_mode": "FULL",
            "query_tokens": 1080,
        }
    # without the varlen decode graphs of adaptive verification the default mode pads no requests
    assert fd.dummy_query_rows(*sizes, 256, 1024, 8, 8, CUDAGraphMode.FULL_AND_PIECEWISE, varlen=False) is None
    path, cex = fd.dummy_run_counterexample(vllm_root, vllm_capture_sizes)
    assert path["result"] == "counterexample"
    assert cex and all(
        c["reproduced"] and c["values"]["query_tokens"] > c["values"]["max_num_batched_tokens"] for c in cex
    )
    assert os.path.exists(os.path.join(vllm_root, fd.DFLASH_V2))


@pytest.mark.real
@pytest.mark.parametrize("query_extra", [0, 1])
def test_real_dummy_run_obligation_agrees_with_vllms_own_code(vllm_root, query_extra):
    """spec/vllm_0_33_dflash_dummy_runs.py against vLLM 0.33.0's own post-capture dummy runs
    (``dummy_query_rows``: ``_dummy_run``, ``_init_candidates``, ``dispatch_cg_and_sync_dp`` on the
    capture sizes ``_set_cudagraph_sizes`` computes; FULL_AND_PIECEWISE with adaptive
    verification's varlen decode graphs, non-SM100): on every deployment of a small grid the
    obligation finds a counterexample exactly when vLLM's code overruns the token budget."""
    from vllm.config.compilation import CUDAGraphMode

    from capproof import Verdict
    from capproof.engines.vllm.fact_tokens import vllm_capture_sizes
    from tests.conftest import prove

    compared = 0
    for k in (1, 2, 3, 8):
        for seqs in (1, 2, 3, 5, 16, 128, 256):
            for mnbt in (k + 2, 2 * k + 3, 16, 100, 1024):
                if mnbt < seqs or mnbt <= k + query_extra:
                    continue  # rejected by vLLM's config (scheduler.py, vllm.py:2371-2377)
                try:
                    sizes = vllm_capture_sizes(seqs, k, mnbt)
                except ValueError:
                    continue  # no capture size survives the rounding: vLLM refuses the deployment
                hit = fd.dummy_query_rows(
                    *sizes, seqs, mnbt, k, k + query_extra, CUDAGraphMode.FULL_AND_PIECEWISE, varlen=True
                )
                r = prove(
                    "spec/vllm_0_33_dflash_dummy_runs.py",
                    "dflash_dummy_run_query_rows_fit_input_ids",
                    max_num_seqs=seqs,
                    max_num_batched_tokens=mnbt,
                    num_speculative_tokens=k,
                    query_extra=query_extra,
                    default_max_graph_size=512,
                )
                expected = Verdict.COUNTEREXAMPLE if hit is not None else Verdict.PROVED
                assert r.verdict is expected, (k, seqs, mnbt, query_extra, hit, r.message)
                if hit is not None:
                    assert r.counterexample.values["query_rows"] > mnbt
                compared += 1
    assert compared > 40
