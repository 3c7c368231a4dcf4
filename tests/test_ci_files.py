"""The GitHub Actions workflow and the pre-commit hooks agree with the Makefile and the CLI."""

from __future__ import annotations

import os
import re
import shlex

import yaml
from click.testing import CliRunner
from conftest import ROOT
from pre_commit.clientlib import load_config, load_manifest

from capproof.cli import main


def _makefile_option(option: str) -> str:
    text = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    verify = text.split("\nverify-proofs:")[1].split("\n\n")[0]  # make verify's prove half
    return re.search(rf"{option} (\S+)", verify).group(1)


def test_pre_commit_manifest_is_valid_and_its_entries_are_real_cli_commands():
    hooks = load_manifest(os.path.join(ROOT, ".pre-commit-hooks.yaml"))
    assert {h["id"] for h in hooks} == {"capproof-prove", "capproof-report-check"}
    for hook in hooks:
        program, *args = shlex.split(hook["entry"])
        assert program == "capproof" and hook["pass_filenames"] is False
        # unknown options fail before --help is honoured
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (hook["id"], result.output)


def test_the_documented_pre_commit_config_snippet_is_a_valid_config(tmp_path):
    readme = open(os.path.join(ROOT, "docs", "how-to", "ci.md"), encoding="utf-8").read()
    snippet = re.search(r"```yaml\n(# \.pre-commit-config\.yaml.*?)```", readme, re.S).group(1)
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(snippet)
    config = load_config(str(path))
    manifest_ids = {h["id"] for h in load_manifest(os.path.join(ROOT, ".pre-commit-hooks.yaml"))}
    used = {h["id"] for repo in config["repos"] for h in repo["hooks"]}
    assert used and used <= manifest_ids


def test_workflow_runs_make_test_and_verify_and_uploads_what_verify_writes():
    with open(os.path.join(ROOT, ".github", "workflows", "capproof.yml"), encoding="utf-8") as fh:
        workflow = yaml.safe_load(fh)
    (job,) = workflow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "make test" in runs and "make verify" in runs
    sarif = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert sarif["with"]["sarif_file"] == _makefile_option("--sarif")
    artifact = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert _makefile_option("--junit") in artifact["with"]["path"].split()
