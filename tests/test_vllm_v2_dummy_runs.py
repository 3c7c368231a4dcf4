"""spec/vllm_0_33_v2_dummy_runs.py (docs/findings.md, finding 12): the V2 runner's profile run with
the standalone draft model and ``max_num_batched_tokens == max_num_seqs`` has a dummy batch without
a token, and check-config tells such a ``vllm serve`` line "will fail". The model is compared with
vLLM's own ``_dummy_run`` statements in the real tier (tests/test_fact_v2_dummy_tokens.py)."""

import json
import os
import subprocess
import sys

import pytest

from capproof import Verdict
from capproof.engines.vllm.deployment import v1_runner_possible, v2_runner_pin
from capproof.engines.vllm.serve import parse_serve_args
from models.vllm.dummy_run import speculator_dummy_counts
from tests.conftest import ROOT, assert_counterexample, prove

SPEC = "spec/vllm_0_33_v2_dummy_runs.py"
NAME = "v2_profile_run_dummy_batch_has_a_token"


def test_the_findings_counts_on_ints():
    # the reproduction's sizes: 4 requests, 4 tokens budget -> 4 requests, 0 tokens; one more
    # token of budget gives the dummy batch its one token (docs/findings.md, finding 12)
    assert speculator_dummy_counts(4, 4, 4, 1, 1) == (4, 0)
    assert speculator_dummy_counts(5, 4, 5, 1, 1) == (4, 1)
    # vLLM's default budgets (max_num_seqs 256, max_num_batched_tokens 8192)
    assert speculator_dummy_counts(8192, 256, 8192, 1, 1) == (256, 7936)


def test_the_smallest_counterexample_is_the_findings():
    r = prove(SPEC, NAME)
    assert_counterexample(r, tokens_the_dispatch_needs=1, dummy_tokens=0)
    assert (r.counterexample.params["max_num_seqs"], r.counterexample.params["max_num_batched_tokens"]) == (2, 2)
    assert (r.counterexample.params["method"], r.counterexample.params["v2_runner"]) == (2, 1)


def test_one_token_of_budget_more_holds():
    r = prove(SPEC, NAME, max_num_seqs=256, max_num_batched_tokens=257, method=2, v2_runner=1)
    assert r.verdict is Verdict.PROVED, r.message
    # and the V1 runner or another method never takes this return
    for method, v2 in ((2, 0), (0, 1), (3, 1)):
        r = prove(SPEC, NAME, max_num_seqs=256, max_num_batched_tokens=256, method=method, v2_runner=v2)
        assert r.verdict is Verdict.PROVED, (method, v2, r.message)


def _line(*extra, spec=None):
    config = {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 1, **(spec or {})}
    return ["vllm", "serve", "Qwen/Qwen3-8B", "--speculative-config", json.dumps(config), *extra]


@pytest.mark.parametrize(
    ("env", "spec", "extra", "pin"),
    [
        ({}, {}, [], 1),
        ({"VLLM_USE_V2_MODEL_RUNNER": "1"}, {}, [], 1),
        ({"VLLM_USE_V2_MODEL_RUNNER": "0"}, {}, [], 0),
        ({"VLLM_USE_V2_MODEL_RUNNER": "false"}, {}, [], 0),  # vLLM refuses it: no run at all
        ({}, {"use_heterogeneous_vocab": True}, [], 0),
        ({}, {"parallel_drafting": True}, [], 0),
        ({}, {}, ["--enable-dbo"], 0),
        ({"VLLM_USE_V2_MODEL_RUNNER": "0"}, {}, ["--watermark-config", "{}"], None),
    ],
)
def test_which_runner_check_config_pins(env, spec, extra, pin):
    cfg = parse_serve_args(_line(*extra, spec=spec)[2:])
    cfg.env = env
    got, why = v2_runner_pin(cfg)
    assert got == pin, why
    if pin is not None:
        # the two readings of vLLM's runner choice agree where the line decides it
        assert v1_runner_possible(cfg) is (pin == 0 or bool(extra))


def _check_config(tmp_path, *extra, env=(), spec=None):
    """check-config through the real entry point on a ``vllm serve`` line whose draft model is a
    local directory with a plain Qwen3 config.json (so vLLM keeps the draft_model method)."""
    draft = tmp_path / "draft"
    draft.mkdir(exist_ok=True)
    (draft / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}))
    config = {"method": "draft_model", "model": str(draft), "num_speculative_tokens": 1, **(spec or {})}
    line = [*env, "vllm", "serve", "Qwen/Qwen3-8B", "--speculative-config", json.dumps(config), *extra]
    done = subprocess.run(
        [sys.executable, "-m", "capproof", "check-config", "--json", "-", "--spec", SPEC, "--", *line],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )
    report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return done, report


def _ours(report):
    return [c for c in report["obligations"] if NAME in c["id"]]


EQUAL = ("--max-num-seqs", "2", "--max-num-batched-tokens", "2")


def test_check_config_says_will_fail_at_equal_budgets(tmp_path):
    done, report = _check_config(tmp_path, *EQUAL)
    assert done.returncode == 1, done.stdout + done.stderr
    assert report["verdict"] == "will fail"
    assert [c["verdict"] for c in _ours(report)] == ["counterexample"]


def test_check_config_holds_on_the_default_budgets_and_the_v1_runner(tmp_path):
    for env, spec, extra in (
        ((), None, ()),  # vLLM's default budgets: 256 requests, 8192 tokens
        (("VLLM_USE_V2_MODEL_RUNNER=0",), None, EQUAL),
        ((), {"use_heterogeneous_vocab": True}, EQUAL),
    ):
        done, report = _check_config(tmp_path, *extra, env=env, spec=spec)
        assert [c["verdict"] for c in _ours(report)] == ["proved"], (env, spec, extra, done.stdout + done.stderr)
        assert "VLLM_USE_V2_MODEL_RUNNER" not in report["environment_not_read"], report["environment_not_read"]


def test_check_config_leaves_a_hub_draft_undecided(tmp_path):
    # a hub draft's config.json is not read: vLLM may detect EAGLE from it, so the standalone
    # draft model's failure is not this line's "will fail"
    config = {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 1}
    done = subprocess.run(
        [sys.executable, "-m", "capproof", "check-config", "--json", "-", "--spec", SPEC, "--"]
        + ["vllm", "serve", "Qwen/Qwen3-8B", "--speculative-config", json.dumps(config), *EQUAL],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["verdict"] == "undecided", done.stdout + done.stderr
    assert [c["verdict"] for c in _ours(report)] == ["counterexample"]


def test_a_bad_heterogeneous_vocab_value_is_one_line(tmp_path):
    done, _ = _check_config(tmp_path, spec={"use_heterogeneous_vocab": "yes"})
    assert done.returncode == 4, done.stdout + done.stderr
    assert "use_heterogeneous_vocab must be true or false" in done.stderr + done.stdout
