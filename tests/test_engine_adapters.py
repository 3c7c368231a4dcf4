"""The engine adapters and their registry: ``--engine`` -> adapter, and obligation parameters
checked against the adapter's vocabulary (a near miss of a config name is a warning)."""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from capproof.cli import main
from capproof.engines.adapter import CheckError, EngineAdapter, near_miss
from capproof.engines.registry import ADAPTERS, adapter_for, engine_names, inventory_adapter, parse_engine

TYPO_SPEC = """
from capproof import Range, at_most, obligation


@obligation(
    domain={"max_model_length": Range(1, 4096), "blocksize": Range(1, 64)}, engine="vllm", versions="==0.33.0"
)
def table_width(max_model_length, blocksize):
    return at_most(demand=(max_model_length + blocksize - 1) // blocksize, capacity=4096)
"""


def test_every_registered_adapter_has_the_protocol_and_a_distinct_engine():
    members = [m for m in dir(EngineAdapter) if not m.startswith("_")]
    for adapter in ADAPTERS:
        assert [m for m in members if not hasattr(adapter, m)] == []
        assert adapter.engines[0] == adapter.name
    assert len(engine_names()) == len(set(engine_names()))
    assert adapter_for("vllm-ascend") is adapter_for("vllm")
    with pytest.raises(KeyError):
        adapter_for("trtllm")


def test_engine_text_resolves_through_the_adapters():
    assert parse_engine("vllm") == ("vllm", adapter_for("vllm").default_version())
    assert parse_engine(" SGLang ") == ("sglang", "0.5.23")
    assert parse_engine("vllm==v0.33") == ("vllm", "0.33.0")
    with pytest.raises(
        CheckError, match=r"supported are vllm\[==VERSION\], vllm-ascend==VERSION and sglang\[==0.5.23\]"
    ):
        parse_engine("vlm")
    with pytest.raises(CheckError, match="capproof models sglang 0.5.23 only"):
        parse_engine("sglang==0.4.0")


def test_inventory_picks_the_engine_every_release_names():
    assert inventory_adapter("sglang==0.5.23").name == "sglang"
    assert inventory_adapter("sglang==0.5.22", "sglang==0.5.23").name == "sglang"
    assert inventory_adapter(None).name == "vllm"  # the default engine
    assert inventory_adapter("vllm==0.32.0", "sglang==0.5.23").name == "vllm"


@pytest.mark.parametrize(
    "name, meant",
    [
        ("max_model_length", "max_model_len"),  # a word cut or lengthened
        ("blocksize", "block_size"),  # underscores
        ("Max_Model_Len", "max_model_len"),  # case
        ("max_num_seq", "max_num_seqs"),  # a letter dropped
        ("max_modle_len", "max_model_len"),  # two letters swapped
        ("num_speculative_token", "num_speculative_tokens"),
        ("max_model_len", None),  # the name itself
        ("block_size_m", None),  # a word more: another name (a kernel tile size in spec/)
        ("num_reqs", None),  # a word fewer than max_num_reqs: the batch's request count
        ("num_scheduled_tokens", None),
        ("max_decode_len", None),  # another word, not a typo of "model"
    ],
)
def test_near_miss_of_a_vllm_config_name(name, meant):
    assert near_miss(name, adapter_for("vllm").vocabulary()) == meant


def test_sglang_vocabulary_has_its_launch_flags():
    vocabulary = adapter_for("sglang").vocabulary()
    assert {"context_len", "page_size", "context_length", "max_running_requests"} <= vocabulary
    assert adapter_for("sglang").did_you_mean("page_sizes") == "page_size"


def test_a_near_miss_parameter_is_a_warning_under_prove(project):
    (project / "spec" / "typo.py").write_text(textwrap.dedent(TYPO_SPEC))
    result = CliRunner().invoke(main, ["prove", "spec"])
    assert result.exit_code == 0, result.output
    assert (
        "warning: spec/typo.py::table_width: parameter 'max_model_length' is not a vLLM config name; "
        "did you mean 'max_model_len'?" in result.stderr
    )
    assert "parameter 'blocksize' is not a vLLM config name; did you mean 'block_size'?" in result.stderr
    assert "warning" not in result.stdout


def test_a_near_miss_parameter_is_a_warning_under_check_config(project):
    """The parameter stays free (the flag pins block_size, which the obligation does not have)."""
    (project / "spec" / "typo.py").write_text(textwrap.dedent(TYPO_SPEC))
    result = CliRunner().invoke(
        main, ["check-config", "--spec", "spec", "--", "vllm", "serve", "m", "--max-model-len", "2048"]
    )
    assert "holds for every max_model_length, blocksize" in result.stdout
    assert "did you mean 'max_model_len'? (check-config pins max_model_len" in result.stderr


def test_shipped_obligations_have_no_near_miss_parameter():
    from capproof.engines.registry import parameter_warnings
    from capproof.loader import load

    items, errors = load(("spec",))
    assert errors == [] and len(items) > 100
    assert parameter_warnings(items) == []
