"""CrossHair verdict mapping on small models, and the seeded bug of the real models is found."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from capproof import Options, Verdict
from capproof.contracts import check_contract
from capproof.obligation import contract

MODEL = '''
def confirmed(x: int) -> int:
    """
    pre: x >= 0
    post: __return__ > x
    """
    return x + 1


def refuted(x: int) -> int:
    """
    pre: x >= 0
    post: __return__ < 10
    """
    return x


def contradictory(x: int) -> int:
    """
    pre: x > 0
    pre: x < 0
    post: __return__ == x
    """
    return x


def explodes(x: int) -> int:
    """
    pre: x >= 0
    post: True
    """
    if x == 7:
        raise RuntimeError("boom")
    return x


def no_contract(x: int) -> int:
    return x
'''


@pytest.fixture
def models_pkg(tmp_path, monkeypatch):
    pkg = tmp_path / "ctmodels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "small.py").write_text(textwrap.dedent(MODEL))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ctmodels/small.py"
    for name in [m for m in sys.modules if m.startswith("ctmodels")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    "name, verdict",
    [
        ("confirmed", Verdict.PROVED),
        ("refuted", Verdict.COUNTEREXAMPLE),
        ("contradictory", Verdict.VACUOUS),
        ("explodes", Verdict.COUNTEREXAMPLE),
    ],
)
def test_crosshair_states_map_to_verdicts(models_pkg, name, verdict):
    r = check_contract(contract(f"{models_pkg}::{name}"), Options(crosshair_timeout=10))
    assert r.verdict is verdict, r.message
    if verdict is Verdict.COUNTEREXAMPLE:
        assert "calling" in r.message  # CrossHair names the failing input


@pytest.mark.parametrize(
    "target, fragment",
    [
        ("ctmodels/small.py::no_contract", "no PEP 316 postcondition"),
        ("ctmodels/small.py::missing", "has no function 'missing'"),
        ("ctmodels/small.py", "must look like"),
        ("ctmodels/nope.py::f", "ModuleNotFoundError"),
    ],
)
def test_bad_contract_targets_are_errors(models_pkg, target, fragment):
    r = check_contract(contract(target), Options(crosshair_timeout=5))
    assert r.verdict is Verdict.ERROR
    assert fragment in r.message


def test_quality_seeded_unchecked_indexer_bug_is_found():
    """The unchecked indexer's contract (index < capacity) must be refuted with a concrete call."""
    r = check_contract(
        contract("models/runtime_indexers.py::unchecked_row"), Options(crosshair_timeout=20, crosshair_cache=False)
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE
    assert "unchecked_row(" in r.message


def test_quality_checked_row_is_confirmed_on_all_paths():
    r = check_contract(
        contract("models/runtime_indexers.py::checked_row"), Options(crosshair_timeout=20, crosshair_cache=False)
    )
    assert r.verdict is Verdict.PROVED, r.message


def _split_broken(kind):
    """A broken stand-in for one half of vLLM 0.33.0's prefill splitter (models/vllm/indexer_prefill.py)."""
    from capproof.arith import maximum, minimum

    def cut(chunk_m, chunk_n, max_logits_bytes):
        budget, out, q0 = max_logits_bytes // 4, [], 0
        piece = maximum(1, budget // chunk_n + (kind == "piece_too_long")) if chunk_n > 0 else maximum(1, chunk_m)
        piece = 1 if kind == "single_rows" else piece
        while q0 < chunk_m:
            out.append((q0, q0 + (piece if kind == "last_overshoots" else minimum(piece, chunk_m - q0))))
            q0 += piece
        return out

    def group(seq_lens, query_lens, workspace_size, max_logits_bytes):  # the workspace bound ignored
        budget, out, i, n = max_logits_bytes // 4, [], 0, len(seq_lens)
        while i < n:
            start, m, s = i, 0, 0
            while i < n and (m + query_lens[i]) * (s + seq_lens[i]) <= budget:
                m, s, i = m + query_lens[i], s + seq_lens[i], i + 1
            if i == start:
                m, s, i = query_lens[i], seq_lens[i], i + 1
            out.append((start, i, m, s))
        return out

    return ("group_prefill_requests", group) if kind == "workspace_ignored" else ("cut_query_rows", cut)


@pytest.mark.parametrize(
    "kind, target",
    [
        ("last_overshoots", "query_pieces_fit_logits"),  # the last piece past the slice's rows
        ("piece_too_long", "query_pieces_fit_logits"),  # one row past the logits budget
        ("single_rows", "query_pieces_fit_logits"),  # pieces shorter than the budget allows
        ("workspace_ignored", "chunks_fit_workspace"),  # a slice past the K workspace
    ],
)
def test_quality_seeded_splitter_bugs_are_found(monkeypatch, kind, target):
    """Each half of the split prefill-splitter contract refutes a seeded bug in its half, with a call."""
    import models.vllm.indexer_prefill as m_pf

    monkeypatch.setattr(m_pf, *_split_broken(kind))
    r = check_contract(
        contract(f"models/vllm/indexer_prefill.py::{target}"), Options(crosshair_timeout=20, crosshair_cache=False)
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert f"{target}(" in r.message


@pytest.mark.parametrize(
    "grown",
    [
        lambda capacity, index: capacity,  # never grows: the write does not fit
        lambda capacity, index: 2 * max(capacity, index + 1),  # grows past twice the index
    ],
)
def test_quality_seeded_growing_write_bugs_are_found(monkeypatch, grown):
    """write_growing's one postcondition (grown_write_kept) still refutes a wrong growth."""
    import models.runtime_indexers as m_rt

    monkeypatch.setattr(m_rt, "grown_capacity", grown)
    r = check_contract(
        contract("models/runtime_indexers.py::write_growing"), Options(crosshair_timeout=20, crosshair_cache=False)
    )
    assert r.verdict is Verdict.COUNTEREXAMPLE, r.message
    assert "write_growing(" in r.message


# --- the verdict cache (.capproof/crosshair/) ------------------------------------------------


def test_cached_verdict_is_reused_only_for_the_same_sources_and_timeout(models_pkg, tmp_path):
    target = f"{models_pkg}::refuted"
    assert check_contract(contract(target), Options(crosshair_timeout=10), cache_only=True) is None
    first = check_contract(contract(target), Options(crosshair_timeout=10))
    assert first.verdict is Verdict.COUNTEREXAMPLE and not first.cached
    assert len(list((tmp_path / ".capproof" / "crosshair").glob("*.json"))) == 1
    again = check_contract(contract(target), Options(crosshair_timeout=10))
    assert again.cached and (again.verdict, again.message, again.conditions) == (
        first.verdict,
        first.message,
        first.conditions,
    )
    assert check_contract(contract(target), Options(crosshair_timeout=11), cache_only=True) is None  # other timeout
    uncached = check_contract(contract(target), Options(crosshair_timeout=10, crosshair_cache=False))
    assert not uncached.cached and uncached.verdict is Verdict.COUNTEREXAMPLE
    # an edit anywhere in the model package (here: the refuted bound fixed) is a new key
    (tmp_path / "ctmodels" / "small.py").write_text(
        textwrap.dedent(MODEL).replace("return x\n\n\ndef contradictory", "return min(x, 9)\n\n\ndef contradictory")
    )
    del sys.modules["ctmodels.small"]
    assert check_contract(contract(target), Options(crosshair_timeout=10), cache_only=True) is None
    fixed = check_contract(contract(target), Options(crosshair_timeout=10))
    assert fixed.verdict is Verdict.PROVED and not fixed.cached, fixed.message
    # a file the target's module cannot import is no new key; its package's __init__.py is
    (tmp_path / "ctmodels" / "helper.py").write_text("X = 1\n")
    assert check_contract(contract(target), Options(crosshair_timeout=10), cache_only=True).cached
    (tmp_path / "ctmodels" / "__init__.py").write_text("# edited\n")
    assert check_contract(contract(target), Options(crosshair_timeout=10), cache_only=True) is None


def test_a_contract_key_covers_the_files_its_module_can_import(tmp_path):
    """reached_files: the module, its packages' __init__.py, what it imports (at module level, inside
    a function, relatively), transitively; not its siblings; None for an import by computed name."""
    from capproof.contracts import reached_files

    pkg = tmp_path / "rm"
    (pkg / "sub").mkdir(parents=True)
    for name, text in {
        "__init__.py": "",
        "sub/__init__.py": "",
        "a.py": "from rm import b\n\ndef f():\n    from .sub import c\n    return c.g() + b.h()\n",
        "b.py": "import rm.sub.d as d\n\ndef h():\n    return d.K\n",
        "sub/c.py": "def g():\n    return 1\n",
        "sub/d.py": "K = 2\n",
        "e.py": "import math\n",
        "dyn.py": "import importlib\nm = importlib.import_module('rm.e')\n",
    }.items():
        (pkg / name).write_text(text)
    got = reached_files(str(pkg / "a.py"), str(tmp_path))
    assert [os.path.relpath(f, pkg) for f in got] == [
        "__init__.py",
        "a.py",
        "b.py",
        os.path.join("sub", "__init__.py"),
        os.path.join("sub", "c.py"),
        os.path.join("sub", "d.py"),
    ]
    assert reached_files(str(pkg / "dyn.py"), str(tmp_path)) is None


def test_errors_and_unknowns_are_not_cached(models_pkg, tmp_path):
    r = check_contract(contract("ctmodels/small.py::no_contract"), Options(crosshair_timeout=5))
    assert r.verdict is Verdict.ERROR
    assert not (tmp_path / ".capproof" / "crosshair").exists()
