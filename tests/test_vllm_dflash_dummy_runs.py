"""spec/vllm_0_33_dflash_dummy_runs.py (docs/findings.md, finding 11): the V2 DFlash/DSpark
drafter's query rows in the target's post-capture dummy runs, and check-config telling a line
that reaches them "will fail". The verdicts are checked against vLLM's own code in the real tier
(tests/test_vllm_fact_tokens_dflash.py); `make verify` proves the obligations themselves, so the
solver-heavy tests here are in the slow tier."""

import json
import os
import subprocess
import sys

import pytest

from capproof import Verdict
from tests.conftest import ROOT, assert_counterexample, prove

SPEC = "spec/vllm_0_33_dflash_dummy_runs.py"
NAME = "dflash_dummy_run_query_rows_fit_input_ids"


@pytest.mark.slow
def test_the_findings_deployment_overruns_by_the_reported_rows():
    # DSpark (anchor sampling: K rows a request), K = 8, --max-num-seqs 256
    # --max-num-batched-tokens 1024: the profiling run of captured size 135 has 135 requests
    r = prove(SPEC, NAME, num_speculative_tokens=8, max_num_seqs=256, max_num_batched_tokens=1024, query_extra=0)
    assert_counterexample(r, capacity=1024)
    assert r.counterexample.values["query_rows"] > 1024


@pytest.mark.slow
def test_the_admission_cap_deployment_holds_for_anchor_sampling_only():
    # 1024 // 8 = 128 requests of 8 rows fill the budget exactly; DFlash's 9 rows do not fit
    held = prove(SPEC, NAME, num_speculative_tokens=8, max_num_seqs=128, max_num_batched_tokens=1024, query_extra=0)
    assert held.verdict is Verdict.PROVED, held.message
    failed = prove(SPEC, NAME, num_speculative_tokens=8, max_num_seqs=128, max_num_batched_tokens=1024, query_extra=1)
    assert_counterexample(failed, capacity=1024)


def _check_config(*line: str):
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "capproof", "check-config", "--json", "-", "--spec", SPEC, "--", *line],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def _spec_config(**extra) -> str:
    return json.dumps({"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 8, **extra})


#: ``vllm serve`` for Qwen3-8B at the DFlash admission cap of K = 8 (1024 // 8 = 128 requests)
SERVE = ("vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "128", "--max-num-batched-tokens", "1024")


@pytest.mark.slow
def test_check_config_says_will_fail_on_a_dflash_line_with_adaptive_verification():
    done = _check_config(*SERVE, "--speculative-config", _spec_config(enable_adaptive_verification=True))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "will fail"
    failing = [c for c in report["obligations"] if c["verdict"] == "counterexample"]
    assert any(NAME in c["id"] for c in failing), failing


def test_check_config_does_not_apply_it_without_adaptive_verification_or_graphs():
    for line in (
        ("--speculative-config", _spec_config()),
        ("--speculative-config", _spec_config(enable_adaptive_verification=True), "--enforce-eager"),
    ):
        done = _check_config(*SERVE, *line)
        report = json.loads(done.stdout)
        applied = [c["id"] for c in report["obligations"]]
        assert not any(NAME in i for i in applied), (line, applied)
        assert report["verdict"] != "will fail", (line, report["verdict"])


@pytest.mark.slow
def test_check_config_leaves_dspark_undecided_without_the_drafts_layout():
    # DSpark's rows per request (K or 1 + K) come from the draft's config.json, which the line
    # does not give: a failure at 1 + K is not this deployment's "will fail"
    done = _check_config(
        *SERVE, "--speculative-config", _spec_config(method="dspark", enable_adaptive_verification=True)
    )
    report = json.loads(done.stdout)
    assert report["verdict"] == "undecided", report["verdict"]
    ours = [c for c in report["obligations"] if NAME in c["id"]]
    assert ours and ours[0]["verdict"] == "counterexample"
    assert done.returncode == 2


def test_bad_adaptive_verification_value_is_one_line():
    done = _check_config(
        "vllm", "serve", "Qwen/Qwen3-8B", "--speculative-config", _spec_config(enable_adaptive_verification="yes")
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert "enable_adaptive_verification must be true or false" in done.stderr + done.stdout
