"""capproof prove's verdict cache (capproof.verdict_cache): an edit re-decides exactly the
obligations that can reach it, and the results are the same as a --no-cache run's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from capproof.cli import main

MODEL_A = "def width(n):\n    return n + 1\n"
MODEL_B = "def rows(n):\n    return 2 * n\n"
SPEC = """
from capproof import Range, obligation, at_most
from cachemodels import a
import cachemodels.b as b

@obligation(domain={"n": Range(1, 100)})
def uses_a(n):
    return at_most(demand=a.width(n), capacity=101)

@obligation(domain={"n": Range(1, 100)}, expect="counterexample")
def uses_b(n):
    return at_most(demand=b.rows(n), capacity=150)

@obligation(domain={"n": Range(1, 100)})
def uses_both(n):
    return at_most(demand=a.width(n) + b.rows(n), capacity=301)

@obligation(domain={"n": Range(1, 100)})
def uses_neither(n):
    return at_most(demand=n, capacity=100)
"""


def _prove(*args: str) -> dict:
    result = CliRunner().invoke(
        main, ["prove", "spec", "--no-contracts", "--density", "off", "-j", "1", "--json", "-", *args]
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _decided(data: dict) -> set[str]:
    """Obligations a run decided (not answered from the cache): their stored result is rewritten."""
    return {o["id"].split("::")[1] for o in data["obligations"]}


def _without_seconds(data: dict) -> list[dict]:
    """The results without the CPU times they took and whether they came from the cache (neither
    is rendered into proofs/)."""
    out = []
    for o in data["obligations"]:
        o = {k: v for k, v in o.items() if k not in ("seconds", "cached")}
        if o.get("first_counterexample"):
            o["first_counterexample"] = {k: v for k, v in o["first_counterexample"].items() if k != "seconds"}
        out.append(o)
    return out


def test_an_edit_to_one_model_re_decides_only_its_dependents(project, monkeypatch):
    (project / "cachemodels").mkdir()
    (project / "cachemodels" / "__init__.py").write_text("")
    (project / "cachemodels" / "a.py").write_text(MODEL_A)
    (project / "cachemodels" / "b.py").write_text(MODEL_B)
    (project / "spec" / "cached.py").write_text(SPEC)
    monkeypatch.syspath_prepend(str(project))
    cache = project / ".capproof" / "verdicts"

    cold = _prove()
    assert {o["id"].split("::")[1]: o["verdict"] for o in cold["obligations"]} == {
        "uses_a": "proved",
        "uses_b": "counterexample",
        "uses_both": "proved",
        "uses_neither": "proved",
    }
    stored = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert len(stored) == 4

    warm = _prove()
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == stored  # nothing decided again
    assert _without_seconds(warm) == _without_seconds(cold)

    # one model edited (a comment and a tighter formula): its two dependents only are decided again
    (project / "cachemodels" / "b.py").write_text("# rows of the table\ndef rows(n):\n    return 2 * n - 1\n")
    import importlib
    import sys

    for name in [m for m in sys.modules if m.startswith(("cachemodels", "capproof_spec"))]:
        del sys.modules[name]
    import capproof.loader

    capproof.loader._loaded.clear()
    importlib.invalidate_caches()
    edited = _prove()
    now = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    new_keys = set(now) - set(stored)
    assert len(new_keys) == 2  # uses_b and uses_both, under their new keys
    assert all(now[k] == t for k, t in stored.items())  # the other results were read, not rewritten
    fresh = _prove("--no-cache")
    assert _without_seconds(edited) == _without_seconds(fresh)
    verdicts = {o["id"].split("::")[1]: o for o in edited["obligations"]}
    assert verdicts["uses_b"]["counterexample"]["params"] == {"n": 76}  # 2*76-1 = 151 > 150


def test_unknown_and_error_verdicts_are_not_stored(project, monkeypatch):
    (project / "spec" / "broken.py").write_text(
        "from capproof import Range, obligation, at_most\n"
        "@obligation(domain={'n': Range(1, 10)})\n"
        "def raises(n):\n    raise RuntimeError('model bug')\n"
    )
    data = _prove_any()
    assert data["obligations"][0]["verdict"] == "error"
    assert not (project / ".capproof" / "verdicts").exists() or not list((project / ".capproof" / "verdicts").iterdir())


def _prove_any() -> dict:
    result = CliRunner().invoke(main, ["prove", "spec", "--no-contracts", "--density", "off", "--json", "-"])
    return json.loads(result.output)


def test_the_key_covers_options_pins_and_run_time_settings(project, monkeypatch):
    """A pin, an option or an environment variable the model reads (an engine's own, not only
    CAPPROOF_*) is part of the key: no stale hit."""
    (project / "spec" / "env.py").write_text(
        "import os\nfrom capproof import Range, obligation, at_most\n"
        "@obligation(domain={'n': Range(1, 10)})\n"
        "def reads_env(n):\n    return at_most(demand=n + int(os.environ.get('VLLM_TEST_EXTRA', '0')), capacity=10)\n"
    )
    assert _prove_any()["obligations"][0]["verdict"] == "proved"
    monkeypatch.setenv("VLLM_TEST_EXTRA", "1")
    assert _prove_any()["obligations"][0]["verdict"] == "counterexample"
    monkeypatch.delenv("VLLM_TEST_EXTRA")
    pinned = CliRunner().invoke(main, ["prove", "spec", "--no-contracts", "--set", "n=3", "--json", "-"])
    assert json.loads(pinned.output)["obligations"][0]["pins"] == {"n": 3}
    assert len(list((project / ".capproof" / "verdicts").iterdir())) == 3


def test_make_and_a_shell_share_the_cache(project, monkeypatch):
    """What make passes to a recipe (its jobserver descriptors, which follow the descriptors its
    caller had open, a VAR=value of its command line, its level, the Makefile's malloc tuning) is
    not in the key: `make verify`
    reuses the verdicts of `capproof prove` and the other way round. A variable a model reads is."""
    (project / "spec" / "env.py").write_text(
        "from capproof import Range, obligation, at_most\n"
        "@obligation(domain={'n': Range(1, 10)})\n"
        "def fits(n):\n    return at_most(demand=n, capacity=10)\n"
    )
    assert _prove_any()["obligations"][0]["verdict"] == "proved"
    stored = {p.name: p.stat().st_mtime_ns for p in (project / ".capproof" / "verdicts").iterdir()}
    monkeypatch.setenv("MAKEFLAGS", " -j2 -Oline --jobserver-auth=4,5 --no-print-directory -- BIN=/tmp/bin")
    monkeypatch.setenv("MAKELEVEL", "2")
    monkeypatch.setenv("MAKEOVERRIDES", "${-*-command-variables-*-}")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")  # the Makefile's export
    assert _prove_any()["obligations"][0]["verdict"] == "proved"
    assert {p.name: p.stat().st_mtime_ns for p in (project / ".capproof" / "verdicts").iterdir()} == stored
    monkeypatch.setenv("CAPPROOF_BATCH", "1024")
    _prove_any()
    assert len(list((project / ".capproof" / "verdicts").iterdir())) == 2


def _proofs(project) -> dict[str, bytes]:
    return {str(p.relative_to(project)): p.read_bytes() for p in sorted((project / "proofs").rglob("*")) if p.is_file()}


def _forget_models() -> None:
    """Make the in-process CLI runs import the models and spec files again (as a new process would)."""
    import importlib
    import sys

    import capproof.loader

    for name in [m for m in sys.modules if m.startswith(("cachemodels", "capproof_spec"))]:
        del sys.modules[name]
    capproof.loader._loaded.clear()
    importlib.invalidate_caches()


def _verify(*flags: str) -> None:
    """What `make verify` writes: the run, the reports from it, the bounds."""
    run = CliRunner().invoke(
        main, ["prove", "--no-contracts", "--density", "off", "-j", "1", "--json", ".capproof/run.json", *flags]
    )
    assert run.exit_code == 0, run.output
    assert CliRunner().invoke(main, ["report", "--from", ".capproof/run.json"]).exit_code == 0
    bounds = CliRunner().invoke(main, ["bound", "--write", "-j", "2", *flags])
    assert bounds.exit_code == 0, bounds.output


# slow (about 4 s of CPU: prove, report and bound twice each); test_an_edit_to_one_model_re_decides_only_its_dependents
# and test_a_clean_checkout_re_bounds_only_the_edited_models_dependents keep the re-deciding and re-bounding fast
@pytest.mark.slow
def test_an_edit_to_one_model_re_bounds_only_its_dependents_and_proofs_match_a_no_cache_run(project, monkeypatch):
    (project / "cachemodels").mkdir()
    (project / "cachemodels" / "__init__.py").write_text("")
    (project / "cachemodels" / "a.py").write_text(MODEL_A)
    (project / "cachemodels" / "b.py").write_text(MODEL_B)
    (project / "spec" / "cached.py").write_text(SPEC)
    monkeypatch.syspath_prepend(str(project))
    bounds = project / ".capproof" / "bounds"
    verdicts = project / ".capproof" / "verdicts"

    _forget_models()  # (an earlier test's cachemodels)
    _verify()
    stored = {p.name: p.stat().st_mtime_ns for p in bounds.iterdir()}
    proved = {p.name: p.stat().st_mtime_ns for p in verdicts.iterdir()}
    assert len(stored) == 4 and len(proved) == 4
    cold = _proofs(project)
    _forget_models()
    _verify()  # warm: nothing bounded or decided again, the same proofs/
    assert {p.name: p.stat().st_mtime_ns for p in bounds.iterdir()} == stored
    assert {p.name: p.stat().st_mtime_ns for p in verdicts.iterdir()} == proved
    assert _proofs(project) == cold

    # one model edited: its two dependents only are bounded and decided again
    (project / "cachemodels" / "b.py").write_text("# rows of the table\ndef rows(n):\n    return 2 * n - 1\n")
    _forget_models()
    _verify()
    now = {p.name: p.stat().st_mtime_ns for p in bounds.iterdir()}
    assert len(set(now) - set(stored)) == 2  # uses_b and uses_both, under their new keys
    assert all(now[k] == t for k, t in stored.items())  # the others were read, not rewritten
    assert len(set(p.name for p in verdicts.iterdir()) - set(proved)) == 2
    run = json.loads((project / ".capproof" / "run.json").read_text())
    assert {o["id"].split("::")[1] for o in run["obligations"] if not o["cached"]} == {"uses_b", "uses_both"}
    edited = _proofs(project)
    assert edited != cold
    bounds_md = (project / "proofs" / "bounds.md").read_text()
    assert "| bounded | 199 | 199 | 150 | -49 |" in bounds_md  # uses_b after the edit: worst 2*100-1, slack 150-199

    # byte-identical to a run that re-decides and re-bounds everything
    _forget_models()
    _verify("--no-cache")
    assert _proofs(project) == edited


def _bound(*flags: str):
    result = CliRunner().invoke(main, ["bound", "-j", "1", *flags])
    assert result.exit_code in (0, 1), result.output
    return result


def _record_lines(project) -> dict[str, str]:
    """proofs/bounds.json's line of each obligation, by name."""
    lines = (project / "proofs" / "bounds.json").read_text().splitlines()
    return {json.loads(line.strip().rstrip(","))["id"].split("::")[1]: line for line in lines if '"id":' in line}


def test_a_clean_checkout_re_bounds_only_the_edited_models_dependents(project, monkeypatch):
    """proofs/bounds.json keys each obligation's record on what it reaches: with no .capproof/ (a
    clean clone, CI), an edit to one model bounds its dependents from scratch and certifies the
    others; `bound --write` then rewrites their lines only, byte-identical to a from-scratch run."""
    import shutil

    (project / "cachemodels").mkdir()
    (project / "cachemodels" / "__init__.py").write_text("")
    (project / "cachemodels" / "a.py").write_text(MODEL_A)
    (project / "cachemodels" / "b.py").write_text(MODEL_B)
    (project / "spec" / "cached.py").write_text(SPEC)
    monkeypatch.syspath_prepend(str(project))
    _forget_models()
    _bound("--write", "--no-cache")
    before = _record_lines(project)
    assert set(before) == {"uses_a", "uses_b", "uses_both", "uses_neither"}
    clean = _bound("--check", "--no-cache")
    assert clean.exit_code == 0 and "from scratch" not in clean.output, clean.output

    (project / "cachemodels" / "b.py").write_text("# rows of the table\ndef rows(n):\n    return 2 * n - 1\n")
    _forget_models()
    stale = _bound("--check", "--no-cache")
    assert stale.exit_code == 1 and "stale proofs/bounds.md" in stale.output
    redone = {line.split("::")[1].split(":")[0] for line in stale.output.splitlines() if "bounded from scratch" in line}
    assert redone == {"uses_b", "uses_both"}, stale.output

    _forget_models()
    written = _bound("--write")
    assert "bounded again: 2 obligations" in written.output, written.output
    after = _record_lines(project)
    assert {n for n in after if after[n] != before[n]} == {"uses_b", "uses_both"}
    incremental = {p: (project / "proofs" / p).read_bytes() for p in ("bounds.json", "bounds.md")}

    # from scratch: no record, no cache
    (project / "proofs" / "bounds.json").unlink()
    shutil.rmtree(project / ".capproof", ignore_errors=True)
    _forget_models()
    _bound("--write", "--no-cache")
    assert {p: (project / "proofs" / p).read_bytes() for p in ("bounds.json", "bounds.md")} == incremental
