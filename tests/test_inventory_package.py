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
