"""The committed inventory is found wherever capproof runs (capproof.inventory.locate), and
pyproject.toml ships it as package data (the wheel itself is checked in tests/test_install.py,
slow tier)."""

from __future__ import annotations

import os
import tomllib

from conftest import ROOT

from capproof import inventory as inv

REVIEWED = os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json")


def test_locate_finds_the_reviewed_inventory_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = inv.locate("proofs/inventory/vllm-0.33.0.json")
    assert os.path.isabs(found)
    with open(found, "rb") as a, open(REVIEWED, "rb") as b:
        assert a.read() == b.read()
    assert len(inv.load("proofs/inventory/vllm-0.33.0.json")) == len(inv.load(REVIEWED)) > 400


def test_locate_keeps_an_existing_path_and_other_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "proofs" / "inventory"
    own.mkdir(parents=True)
    (own / "vllm-0.33.0.json").write_text('{"engine": "vllm", "version": "0.33.0", "entries": []}\n')
    assert inv.locate("proofs/inventory/vllm-0.33.0.json") == "proofs/inventory/vllm-0.33.0.json"
    assert inv.load("proofs/inventory/vllm-0.33.0.json") == []
    # only the proofs/inventory/ layout falls back to the shipped copy
    assert inv.locate("elsewhere/vllm-0.33.0.json") == "elsewhere/vllm-0.33.0.json"


def test_pyproject_ships_proofs_inventory_as_package_data():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        tool = tomllib.load(fh)["tool"]["setuptools"]
    assert "capproof._engine.inventory" in tool["packages"]
    assert tool["package-dir"]["capproof._engine.inventory"] == "proofs/inventory"
    assert "*.json" in tool["package-data"]["capproof._engine.inventory"]


def test_inventory_without_torch_prints_one_line_naming_what_was_not_traced(monkeypatch):
    """Outside the real venv every constructor fails on ``import torch``: ``capproof inventory``
    printed one warning per constructor (88); now one line per missing module, saying how to trace."""
    from click.testing import CliRunner

    from capproof.cli import main
    from capproof.engines.vllm import buffers, wheels

    problems = [f"Builder{i}: ModuleNotFoundError: No module named 'torch'" for i in range(88)]
    problems += ["derive_acceptance_estimator failed: ModuleNotFoundError: No module named 'torch.nn'"]
    problems += ["traced allocation x is not in the static scan"]
    monkeypatch.setattr(wheels, "fetch_version", lambda *a, **k: None)
    monkeypatch.setattr(buffers, "build", lambda version, trace=True: buffers.Built([], 410, 1.0, list(problems)))
    monkeypatch.setattr(buffers._command, "finish", lambda *a, **k: 0)
    result = CliRunner().invoke(main, ["inventory", "--engine", "vllm==0.33.0"])
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert result.exit_code == 0 and len(warnings) == 2, result.output
    assert warnings[0] == "warning: traced allocation x is not in the static scan"
    assert warnings[1].startswith("warning: 89 constructors and demand derivations not traced: no module named 'torch'")
    assert "(Builder0, Builder1, Builder2, … (86 more))" in warnings[1] and "make real-install" in warnings[1]
