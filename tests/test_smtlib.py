"""SMT-LIB 2 export (logic detection, file names, determinism) and the cvc5 cross-check."""

from __future__ import annotations

import os

import pytest
import z3
from conftest import obligation_named

from capproof import Options, Verdict
from capproof.crosscheck import cvc5_check
from capproof.prover import build_case, prove_obligation
from capproof.smtlib import case_file_name, case_smt2, logic_of

A1 = ("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_before_50302")


def test_logic_detection():
    x, y = z3.Ints("x y")
    assert logic_of([x * 3 + y / 64 > x % 128]) == "QF_LIA"
    assert logic_of([x * y > 3]) == "QF_NIA"
    assert logic_of([x / y > 3]) == "QF_NIA"
    assert logic_of([x % (y + 1) == 0]) == "QF_NIA"


def test_export_a1_case_names_logic_status_and_cvc5_agrees(tmp_path):
    ob = obligation_named(*A1)
    result = prove_obligation(
        ob, Options(smt2_dir=str(tmp_path), pins={"max_model_len": 350000, "block_size": 64, "dcp": 1})
    )
    assert result.verdict is Verdict.COUNTEREXAMPLE
    (name,) = os.listdir(tmp_path)
    # a pinned Range is a finite value: it names the case
    assert (
        name == "vllm_dsa_indexer.ebt_width_matches_runner_before_50302__max_model_len-350000_block_size-64_dcp-1.smt2"
    )
    text = (tmp_path / name).read_text()
    assert "(set-logic QF_LIA)" in text and "(set-info :status sat)" in text and "declare-fun" not in text
    assert cvc5_check(text) == "sat"


def test_export_is_deterministic_and_unsat_for_a_proof():
    ob = obligation_named("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_after_50823")
    fixed = {"block_size": 64, "dcp": 2, "kernel_block_size": 64}
    from capproof.domain import Range

    def make():
        return case_smt2(build_case(ob, fixed, {"max_model_len": Range(1, 2**21)}, {}), "unsat")

    (first, logic), (second, _) = make(), make()
    assert first == second and logic == "QF_LIA"
    assert cvc5_check(first) == "unsat"
    assert case_file_name(ob, fixed).endswith("__block_size-64_dcp-2_kernel_block_size-64.smt2")


def test_cross_check_agrees_on_the_block_table_specs_and_skips_nonlinear():
    ok = prove_obligation(
        obligation_named("spec/vllm_block_table.py", "row_spans_128_tokens_v0_33"), Options(cross_check="cvc5")
    )
    assert ok.verdict is Verdict.PROVED
    assert ok.cross_check == {
        "solver": "cvc5",
        "agreed": 64,
        "disagreed": 0,
        "unknown": 0,
        "skipped_nonlinear": 0,
        "not_compared": 0,
    }
    nl = prove_obligation(
        obligation_named("spec/vllm_dsa_indexer.py", "ebt_width_matches_runner_for_every_batch_before_50302"),
        Options(cross_check="cvc5", pins={"dcp": 1}),
    )
    assert (
        nl.verdict is Verdict.COUNTEREXAMPLE and nl.cross_check["skipped_nonlinear"] == 1
    )  # num_decodes * max_decode_len


def test_disagreement_is_an_error_verdict(monkeypatch):
    import capproof.crosscheck as cc

    monkeypatch.setattr(cc, "cvc5_check", lambda text, timeout_ms=0: "sat")  # a lying second solver
    result = prove_obligation(
        obligation_named("spec/vllm_block_table.py", "row_spans_128_tokens_v0_33"),
        Options(cross_check="cvc5", pins={"block_size": 64, "dcp": 1}),
    )
    assert result.verdict is Verdict.ERROR and "disagree" in result.message
    assert result.cross_check["disagreed"] == 1


def test_cvc5_rejects_garbage_with_a_clear_error():
    with pytest.raises(ValueError):
        cvc5_check("(set-logic QF_LIA)\n(assert (> x 1))\n(check-sat)\n")


def test_cli_smt2_and_cross_check(tmp_path):
    from click.testing import CliRunner

    from capproof.cli import main

    out = CliRunner().invoke(
        main,
        [
            "prove",
            "--no-contracts",
            "-k",
            "trtllm_mla_block_num_aligned",
            "--set",
            "dcp=1",
            "--smt2",
            str(tmp_path),
            "--cross-check",
            "cvc5",
        ],
        catch_exceptions=False,
    )
    assert out.exit_code == 0, out.output
    assert len(os.listdir(tmp_path)) == 8  # 2 obligations x 4 block sizes


def test_parameters_named_like_smtlib_reserved_words_are_renamed(spec_file, tmp_path):
    """`let` and `true` as parameter names must not be written bare (cvc5 would misparse them)."""
    from click.testing import CliRunner

    from capproof.cli import main

    path = spec_file("""
from capproof import Range, at_most, obligation

@obligation(domain={"let": Range(0, 10), "true": Range(0, 3)}, expect="counterexample")
def weird_names(let, true):
    return at_most(demand=let + true, capacity=5)
""")
    out = tmp_path / "smt"
    result = CliRunner().invoke(main, ["prove", path, "--smt2", str(out), "--cross-check", "cvc5"])
    assert result.exit_code == 0, result.output
    text = "".join(p.read_text() for p in out.iterdir())
    assert "(declare-fun let__param () Int)" in text and "(declare-fun true__param () Int)" in text
