"""check-config on values the line does not give: vLLM's default block size, a nearby safe
``--max-num-seqs``, and usage errors of the project commands; through the real command line."""

from __future__ import annotations

import json
import os
import re
import textwrap

import pytest
from click.testing import CliRunner
from test_cli_terminal import run_on_pty

from capproof.cli import main
from capproof.engines.checkconfig import Default, resolve_model
from capproof.engines.vllm.block_defaults import DEFAULT_BLOCK_SIZE, PREFERRED_BLOCK_SIZES
from capproof.engines.vllm.deployment import default_block_size
from capproof.engines.vllm.serve import parse_serve_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(*args):
    return CliRunner().invoke(main, ["check-config", *args])


# --- vLLM's default block size --------------------------------------------------------------


def test_the_generated_table_holds_vllms_default_and_every_gpu():
    assert DEFAULT_BLOCK_SIZE == 16
    assert set(PREFERRED_BLOCK_SIZES) == {"A100", "L40S", "H100", "H200", "B200", "B300", "GB10"}
    for rows in PREFERRED_BLOCK_SIZES.values():
        assert all(isinstance(size, int) for kind in rows.values() for _, size in kind)


@pytest.mark.parametrize(
    "model, gpu, expected",
    [
        ("Qwen/Qwen3-8B", "H100", (16,)),  # FLASH_ATTN, FLASHINFER, ... all keep 16
        ("Qwen/Qwen3-8B", None, (16,)),
        ("deepseek-ai/DeepSeek-V3", "H100", (16, 32, 64)),  # FLASH_ATTN_MLA 16, FLASHMLA 64, FLASHINFER_MLA 32
        ("deepseek-ai/DeepSeek-V3", "B200", (16, 32, 64, 128)),  # + CUTLASS_MLA 128
        ("deepseek-ai/DeepSeek-V3", "GB10", (16,)),  # TRITON_MLA only
        ("deepseek-ai/DeepSeek-V3.2", "H100", (64,)),  # sparse MLA backends prefer 64
        ("deepseek-ai/DeepSeek-V3.2", "B200", (32, 64)),  # FLASHINFER_MLA_SPARSE 32
    ],
)
def test_default_block_size_per_model_kind_and_gpu(model, gpu, expected):
    cfg = parse_serve_args([model])
    got = default_block_size("vllm", "0.33.0", gpu, resolve_model(model, None), cfg)
    assert isinstance(got, Default) and got.values == expected, got


def test_head_size_256_adds_flash_attentions_fa4_pages(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 4096, "num_attention_heads": 16}))
    cfg = parse_serve_args(["m"])
    got = default_block_size("vllm", "0.33.0", "B200", resolve_model(str(tmp_path), None), cfg)
    assert got.values == (16, 128)  # FA4_HD256_PAGE_SIZE (flash_attn.py:329-354)


def test_no_default_for_other_releases_and_hybrid_models(tmp_path):
    cfg = parse_serve_args(["m"])
    assert "0.33.0 only" in default_block_size("vllm", "0.23.0", None, None, cfg)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen3NextForCausalLM"]}))
    assert "Mamba" in default_block_size("vllm", "0.33.0", None, resolve_model(str(tmp_path), None), cfg)


def test_assumed_default_block_size_is_shown_on_a_terminal():
    spec = ["--spec", "spec/vllm_block_table.py", "--gpu", "H100"]
    code, out = run_on_pty(
        ["check-config", *spec, "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "32768"], ROOT
    )
    assert code == 0, out
    text = " ".join(out.split())
    assert "rests on a default: block_size in [16, 32, 64]" in text
    assert "FLASHMLA 64" in text and "update_block_size_for_backend" in text
    assert "safe spec/vllm_block_table.py::row_spans_128_tokens_v0_33" in text
    assert "every block size of each obligation's domain is checked" not in text


def test_a_block_size_never_chosen_is_not_a_will_fail():
    """vLLM 0.23.0's default is not derived (no wheel run): block 48 fails #39324's alignment, but
    the user gave no block size: undecided, naming --block-size, never will fail."""
    line = ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "32768"]
    result = check("--engine", "vllm==0.23.0", "--", *line)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("undecided")
    assert "give --block-size N" in result.output
    assert "MAYFAIL spec/vllm_block_table.py::row_spans_128_tokens_39324_any_block_size" in result.output
    assert "not counted as will fail: it fails at block_size=48" in result.output
    data = json.loads(check("--engine", "vllm==0.23.0", "--json", "-", "--", *line).output)
    assert data["verdict"] == "undecided" and any(g.startswith("--block-size N") for g in data["give"])
    failing = [o for o in data["obligations"] if o["verdict"] == "counterexample"]
    assert failing and failing[0]["counted"] is False
    assert failing[0]["fails_only_at_values_not_given"] == {"block_size": 48}
    # the same line with the block size given is decided
    chosen = check("--engine", "vllm==0.23.0", "--", *line, "--block-size", "48")
    assert chosen.exit_code == 1 and chosen.output.startswith("will fail"), chosen.output


# --- a nearby --max-num-seqs ----------------------------------------------------------------

ROWS = """
from capproof import Range, at_most, obligation

@obligation(domain={"max_num_reqs": Range(1, 4096), "max_model_len": Range(1, 2**21)}, engine="vllm", versions=">=0.18")
def request_rows_fit(max_num_reqs, max_model_len):
    return at_most(demand=max_num_reqs * max_model_len, capacity=2**26)
"""


def test_nearby_max_num_seqs_is_found_by_the_solver(tmp_path):
    spec = tmp_path / "rows.py"
    spec.write_text(textwrap.dedent(ROWS))
    line = ["vllm", "serve", "m", "--max-model-len", "32768", "--max-num-seqs", "3000"]
    result = check("--spec", str(spec), "--", *line)
    assert result.exit_code == 1, result.output
    # 3000 * 32768 > 2**26; 2048 * 32768 == 2**26 holds: the largest rounding down that the solver proves
    assert "holds at --max-num-seqs 2048" in result.output
    data = json.loads(check("--spec", str(spec), "--json", "-", "--", *line).output)
    assert data["obligations"][0]["holds_at_max_num_seqs"] == 2048


# --- project commands: usage errors in one line ---------------------------------------------


def test_coverage_from_a_missing_file_is_one_line_exit_4(tmp_path):
    code, out = run_on_pty(["coverage", "--from", "missing.json"], str(tmp_path))
    assert code == 4, out
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())  # one error, wrapped to the terminal's width
    assert text.count("error:") == 1 and "--from missing.json: no such file" in text
    assert "run `make verify` or `capproof prove --json missing.json` first" in text
    # the README's line in a fresh clone (a project without .capproof/): the same one error
    code, out = run_on_pty(["coverage", "--from", ".capproof/last-run.json"], str(_project(tmp_path)))
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())
    assert code == 4 and text.count("error:") == 1 and "capproof prove --json .capproof/last-run.json" in text, out


def _project(tmp_path):
    """A fresh project: pyproject.toml with [tool.capproof] and an empty spec/, no .capproof/."""
    root = tmp_path / "clone"
    (root / "spec").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.capproof]\n")
    return root


@pytest.mark.parametrize("args", [["inventory", "--write"], ["report"], ["coverage", "--write"], ["bound", "--write"]])
def test_project_commands_outside_a_project_are_one_line(args, tmp_path):
    code, out = run_on_pty(args, str(tmp_path))
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "no capproof project here or above" in lines[0], out
    assert not (tmp_path / "proofs").exists()  # nothing written where it was started


# --- "undecided" names what blocks "safe" ---------------------------------------------------


def test_a1_batch_obligation_covers_serving_without_drafts():
    """The per-batch A1 obligation declared num_speculative_tokens in 1..5: a line without drafts
    (0) was undecided although every applied obligation was proved. 0 is in its domain now."""
    line = ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--block-size", "64"]
    safe = check("--engine", "vllm==0.23.0", "--", *line, "--max-model-len", "300000")
    assert safe.exit_code == 0, safe.output
    assert "safe    spec/vllm_dsa_indexer.py::ebt_width_matches_runner_for_every_batch_before_50302" in safe.output
    fails = check("--engine", "vllm==0.23.0", "--", *line, "--max-model-len", "350000")
    assert fails.exit_code == 1 and "W_buf=5469, W_bt=5470" in fails.output


def test_undecided_names_each_obligation_that_blocks_safe():
    result = check(
        "--engine", "vllm==0.23.0", "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--block-size", "512"
    )
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("undecided")
    assert (
        "  not safe because spec/vllm_dsa_indexer.py::ebt_width_matches_runner_before_50302 was not checked: "
        "block_size=512 outside {16, 32, 64, 128, 256}" in lines
    )


# --- plain SGLang lines: the default attention backend --------------------------------------


def _default_backends_apply(argv: list[str], spec: tuple[str, ...] = ()) -> None:
    """The Triton obligation holds; the backends' other index buffers are not decided: undecided."""
    result = check(*spec, "--", *argv)
    assert result.exit_code == 2 and result.output.startswith("undecided"), result.output
    assert "index buffers of the attention backends fa3, fa4 this line runs are not verified" in result.output
    assert (
        "sglang_decode_graph_kv_indices__TritonAttnBackend_cuda_graph_kv_indices"
        not in result.output.split("not checked for this deployment")[1].split("inventory buffers")[0]
    )
    assert "rests on a default: attention_backend in ['fa3', 'fa4', 'flashinfer', 'triton', 'trtllm_mha']" in (
        result.output
    )


def test_plain_sglang_lines_apply_the_obligations_of_the_default_backends():
    """SGLang 0.5.23 picks triton (among others) for standard attention without a GPU named: the
    Triton decode-graph obligation (spec/sglang_0_5_23_buffers.py) applies, proved."""
    _default_backends_apply(
        ["sglang", "serve", "--model-path", "Qwen/Qwen3-8B"], ("--spec", "spec/sglang_0_5_23_buffers.py")
    )


@pytest.mark.slow  # three whole SGLang deployments: the previous test is the fast one (one spec file)
def test_plain_sglang_launch_line_and_h100_defaults():
    """The same over the whole spec/, and on a `python -m sglang.launch_server` line; on H100 the
    defaults are fa3/flashinfer/triton."""
    _default_backends_apply(["sglang", "serve", "--model-path", "Qwen/Qwen3-8B"])
    _default_backends_apply(
        ["python", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--tp", "2"]
    )
    h100 = check("--gpu", "H100", "--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B")
    assert "attention_backend in ['fa3', 'flashinfer', 'triton']" in h100.output and h100.exit_code == 2
    assert "attention backend trtllm_mha" not in h100.output


def test_sglang_moe_model_reads_its_experts_and_says_what_is_missing():
    """DeepSeek-V3: SGLang's model override for DeepseekV3ForCausalLM picks the attention backend
    itself, so the backend obligations need --attention-backend (undecided, never safe); the MoE
    alignment obligations read num_experts/top_k from the model config (they said 'gives no
    num_experts' before)."""
    result = check("--gpu", "B200", "--", "sglang", "serve", "--model-path", "deepseek-ai/DeepSeek-V3")
    assert result.exit_code == 2, result.output
    assert "gives no num_experts" not in result.output
    assert "3 inventory obligations (spec/sglang_0_5_23_buffers.py)" in result.output
    assert "give --attention-backend NAME (SGLang 0.5.23's model override for DeepseekV3ForCausalLM" in result.output


@pytest.mark.slow  # two more whole SGLang deployments: the previous test is the fast one
def test_sglang_moe_model_with_its_backend_given_and_a_dense_model_on_b200():
    """DeepSeek-V3 with --attention-backend fa3: no longer asks for it, still undecided on fa3's other
    buffers. A dense model on B200 (fa4/trtllm_mha): nothing of spec/ reaches it."""
    given = check("--", "sglang", "serve", "--model-path", "deepseek-ai/DeepSeek-V3", "--attention-backend", "fa3")
    assert given.exit_code == 2 and "give --attention-backend" not in given.output, given.output
    assert "index buffers of the attention backend fa3 this line runs are not verified" in given.output
    dense = check("--gpu", "B200", "--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B")
    # fa4 runs flashattention_backend.py: its CUDA-graph metadata obligations apply (no speculative
    # ones without --speculative-algorithm); its other index buffers and trtllm_mha's stay undecided
    assert dense.exit_code == 2, dense.output
    assert "(spec/sglang_0_5_23_derived.py) at these flags" in dense.output
    assert "backend_graph_rows_fit__FlashAttentionBackend_target_verify" not in dense.output.split("not checked")[0]
    assert "index buffers of the attention backend fa4 this line runs are not verified" in dense.output
    assert "index buffers of the attention backend trtllm_mha this line runs are not verified" in dense.output


def test_sarif_marks_a_failure_at_a_value_not_given_as_a_warning(tmp_path):
    sarif = tmp_path / "check.sarif"
    line = ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "32768"]
    result = check("--engine", "vllm==0.23.0", "--sarif", str(sarif), "--", *line)
    assert result.exit_code == 2, result.output
    (finding,) = json.loads(sarif.read_text())["runs"][0]["results"]
    assert finding["level"] == "warning"
    assert "not counted as will fail: only at block_size=48" in finding["message"]["text"]


def test_vllm_mla_disable_turns_the_mla_obligations_off():
    line = ["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "32768", "--block-size", "48"]
    on = check("--engine", "vllm==0.23.0", "--", *line)
    assert on.exit_code == 1 and "row_spans_128_tokens_39324_any_block_size" in on.output, on.output
    off = check("--engine", "vllm==0.23.0", "--", "VLLM_MLA_DISABLE=1", *line)
    assert off.exit_code != 1, off.output
    assert "turned off by the line's environment" in off.output
    assert "environment not read" not in off.output


def test_a_spec_file_of_the_project_checks_from_another_directory(tmp_path, monkeypatch):
    """--spec /path/to/project/spec/x.py imports the project's models/ (it said 'No module named models')."""
    monkeypatch.chdir(tmp_path)
    spec = os.path.join(ROOT, "spec", "vllm_block_table.py")
    result = check("--spec", spec, "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "4096")
    assert result.exit_code == 0, result.output
    assert "ModuleNotFoundError" not in result.output


def test_a_failure_no_smaller_request_limit_fixes_says_so():
    """C3 on vLLM-Ascend 0.25.0: K - 1 = 4 appended slots per request against a reserve of 2 per
    request fail at every request limit; the answer lists the limits the solver tried."""
    line = ["vllm", "serve", "m", "-tp", "4", "-dcp", "4", "--max-num-seqs", "12", "--max-num-batched-tokens", "80"]
    result = check(
        "--engine", "vllm-ascend==0.25.0", "--", *line, "-sc", '{"method": "mtp", "num_speculative_tokens": 5}'
    )
    assert result.exit_code == 1, result.output
    assert "demand=105, capacity=104" in result.output
    assert "fails at --max-num-seqs 8, 6, 3, 1 as well (each tried by the solver, down to 1" in result.output
    assert "holds at --max-num-seqs" not in result.output


# --- the newcomer round's findings ------------------------------------------------------------


def test_sglang_speculative_values_sglang_picks_are_resolved_as_sglang_does():
    """SGLang 0.5.23 picks --speculative-num-steps/-eagle-topk/-num-draft-tokens itself
    (_auto_choose_speculative_params by architecture): a req_to_token overflow found at steps=1,
    topk=4 (values SGLang never picks for DeepSeek) was MAYFAIL; now SGLang's (3, 1, 4) is checked."""
    spec = os.path.join(ROOT, "spec", "sglang_req_to_token.py")
    line = ["python", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3.2", "--tp", "8"]
    line += ["--speculative-algorithm", "EAGLE", "--context-length", "163840", "--attention-backend", "flashmla"]
    result = check("--engine", "sglang", "--spec", spec, "--", *line)
    text = " ".join(result.output.split())
    assert (
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4: SGLang 0.5.23's choice"
        in text
    )
    assert "MAYFAIL" not in text and "give --speculative-eagle-topk" not in text, result.output
    assert result.exit_code in (0, 2) and "req_to_token" in text
    # a count without --speculative-num-steps: SGLang's assert stops it at startup
    bad = check("--engine", "sglang", "--spec", spec, "--", *line, "--speculative-num-draft-tokens", "4")
    assert bad.exit_code == 4 and "without --speculative-num-steps: SGLang 0.5.23 stops at startup" in bad.output
    # an architecture capproof does not know: SGLang's choice is not known, a failure there is MAYFAIL
    unknown = ["python", "-m", "sglang.launch_server", "--model-path", "my-org/unknown", "--tp", "8"]
    unknown += ["--speculative-algorithm", "EAGLE", "--context-length", "163840"]
    result = check("--engine", "sglang", "--spec", spec, "--", *unknown)
    assert result.exit_code == 2 and "FAILS" not in result.output, result.output


@pytest.mark.parametrize("page", ["16", "32", "128"])
def test_sglang_page_sizes_of_its_docs_are_checked_not_outside_the_domain(page):
    """``--page-size 16`` (common in SGLang's docs) was undecided: the req_to_token obligations
    declared page_size in {1, 64} only."""
    spec = os.path.join(ROOT, "spec", "sglang_req_to_token.py")
    line = ["python", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3.2", "--tp", "8"]
    line += ["--page-size", page, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"]
    line += ["--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    result = check("--engine", "sglang", "--spec", spec, "--", *line)
    assert "outside" not in result.output, result.output
    assert "safe    spec/sglang_req_to_token.py::decode_alloc_fits_req_to_token_row" in result.output
    assert result.exit_code == 0 and result.output.startswith("safe"), result.output


@pytest.mark.parametrize(
    "values, architecture, expected",
    [
        (
            {},
            "LlamaForCausalLM",
            {"speculative_num_steps": 5, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8},
        ),
        (
            {},
            "Qwen3ForCausalLM",
            {"speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4},
        ),
        ({}, None, {}),  # the model is not known: SGLang's choice is not either
        (
            {"speculative_num_steps": 2, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 8},
            "LlamaForCausalLM",
            {"speculative_num_draft_tokens": 3},  # topk 1: SGLang sets steps + 1
        ),
        ({"speculative_num_steps": 2, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8}, "X", {}),
    ],
)
def test_speculative_params_as_sglang_resolves_them(values, architecture, expected):
    from capproof.engines.sglang.server_args import speculative_params

    assert speculative_params("EAGLE", values, set(), architecture)[0] == expected
    assert speculative_params("NGRAM", values, set(), architecture) == ({}, "")
    assert speculative_params("EAGLE", values, {"--speculative-adaptive"}, architecture) == ({}, "")
    if not values:
        assert speculative_params("STANDALONE", {}, set(), "LlamaForCausalLM")[0]["speculative_num_steps"] == 3


@pytest.mark.parametrize(
    "length, model, why",
    [
        (["--max-model-len", "auto"], "deepseek-ai/DeepSeek-V3.2", "--max-model-len auto: vLLM fits it to the GPU"),
        (["--max-model-len", "-1"], "deepseek-ai/DeepSeek-V3.2", "--max-model-len auto: vLLM fits it to the GPU"),
        ([], "my-org/unknown", "not given: vLLM takes the model's max_position_embeddings, not known to capproof"),
    ],
)
def test_a_failure_at_a_max_model_len_the_line_does_not_give_is_mayfail_not_will_fail(length, model, why):
    """``--max-model-len auto`` on vLLM 0.26.0 was "will fail" at max_model_len=1, a length capproof
    picked (vLLM fits it to the GPU memory at startup): undecided, naming --max-model-len."""
    spec = os.path.join(ROOT, "spec", "vllm_dsa_indexer.py")
    line = ["vllm", "serve", model, "-tp", "8", *length, "--block-size", "64", "--kv-cache-dtype", "fp8_ds_mla"]
    extra = [] if model.startswith("deepseek") else ["--model-config", _dsa_config()]
    result = check("--engine", "vllm==0.26.0", "--spec", spec, *extra, "--", *line)
    assert result.exit_code == 2 and result.output.startswith("undecided"), result.output
    text = " ".join(result.output.split())
    assert "MAYFAIL spec/vllm_dsa_indexer.py::ebt_width_matches_runner_before_50302" in text
    assert "FAILS" not in text and f"give --max-model-len N ({why}" in text
    given = check("--engine", "vllm==0.26.0", "--spec", spec, *extra, "--", *line[:5], "--max-model-len", "350000")
    assert given.exit_code == 1 and "W_buf=5469, W_bt=5470" in given.output  # the length given decides it


def _dsa_config() -> str:
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "config.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"model_type": "deepseek_v32", "index_topk": 2048, "kv_lora_rank": 512}, fh)
    return path


SMS = """
from capproof import Range, at_most, obligation

@obligation(domain={"num_sms": Range(1, 256)}, engine="vllm", versions=">=0.18")
def workspace_fits(num_sms):
    return at_most(demand=num_sms, capacity=256)
"""


def test_a_gpu_without_an_sm_count_asks_for_num_sms_only(tmp_path):
    spec = tmp_path / "sms.py"
    spec.write_text(textwrap.dedent(SMS))
    result = check("--spec", str(spec), "--gpu", "B300", "--", "vllm", "serve", "m", "--block-size", "16")
    assert result.exit_code == 2, result.output
    assert "give --num-sms N (B300's SM count is not in capproof's table)" in result.output
    assert "give --gpu NAME" not in result.output


def test_sglang_split_flag_names_its_successors():
    result = check("--", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--cuda-graph-max-bs", "8")
    assert result.exit_code == 4
    assert "SGLang 0.5.23 split it: use --cuda-graph-max-bs-decode and/or --cuda-graph-max-bs-prefill" in result.output


def test_check_config_leaves_no_hypothesis_directory_where_it_runs(tmp_path):
    spec = os.path.join(ROOT, "spec", "vllm_block_table.py")
    code, out = run_on_pty(
        ["check-config", "--spec", spec, "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--max-model-len", "4096"],
        str(tmp_path),
    )
    assert code == 0, out
    assert not (tmp_path / ".hypothesis").exists()


def test_a_length_vllm_refuses_at_startup_is_bad_input_and_an_empty_model_directory_is_bad_input(tmp_path):
    """vLLM 0.33.0 refuses --max-model-len above the model's length without VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
    (_get_and_verify_max_len); it was answered safe with a note below the verdict."""
    line = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "1M"]
    spec = os.path.join(ROOT, "spec", "vllm_block_table.py")
    result = check("--spec", spec, "--", *line)
    assert result.exit_code == 4, result.output
    text = " ".join(result.output.split())
    assert text.startswith("error: --max-model-len 1048576 is above the model's length, 40960") and "safe" not in text
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in text and "give --max-model-len 40960 or less" in text
    allowed = check("--spec", spec, "--", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", *line)
    assert allowed.exit_code == 0 and "max_model_len=1048576" in allowed.output
    # DeepSeek-V3.2's 163840 is already YaRN-scaled: vLLM 0.33.0 does not multiply the factor in
    deepseek = check("--spec", spec, "--", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "--max-model-len", "350000")
    assert deepseek.exit_code == 4 and "above the model's length, 163840" in deepseek.output
    # releases before 0.33.0 derived a RoPE-scaled length by other rules: not refused there
    older = check(
        "--spec",
        spec,
        "--engine",
        "vllm==0.26.0",
        "--",
        "vllm",
        "serve",
        "deepseek-ai/DeepSeek-V3.2",
        "--max-model-len",
        "350000",
        "--block-size",
        "64",
    )
    assert older.exit_code != 4 and "above the model's length" not in older.output
    empty = tmp_path / "emptydir"
    empty.mkdir()
    bad = check("--", "vllm", "serve", str(empty))
    assert bad.exit_code == 4 and "a local directory without config.json" in bad.output


def test_an_sglang_context_length_sglang_refuses_at_startup_is_bad_input():
    """SGLang 0.5.23 raises in _derive_context_length for --context-length above the model's
    length unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set."""
    spec = os.path.join(ROOT, "spec", "sglang_req_to_token.py")
    line = ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--context-length", "131072"]
    result = check("--spec", spec, "--", *line)
    assert result.exit_code == 4 and result.output.startswith(
        "error: --context-length 131072 is above the model's length, 40960"
    ), result.output
    allowed = check("--spec", spec, "--", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", *line)
    assert allowed.exit_code != 4 and "context_len=131072" in allowed.output
    # DeepSeek's RoPE factor: SGLang's derived length is not capproof's to say; not refused
    deepseek = ["python", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3.2"]
    assert check("--spec", spec, "--", *deepseek, "--context-length", "200000").exit_code != 4


def test_an_image_tag_naming_no_release_is_not_checked_as_the_newest():
    """corpus F1: vllm/vllm-openai:glm52-x86_64-cu129 is a pre-0.27 build; checking it as 0.33.0 said safe."""
    line = ["docker", "run", "--gpus", "all", "vllm/vllm-openai:glm52-x86_64-cu129", "--model", "zai-org/GLM-5.2-FP8"]
    result = check("--", *line, "--max-model-len", "auto")
    assert result.exit_code == 4 and "the tag names no vLLM release; give --engine vllm==X" in result.output
