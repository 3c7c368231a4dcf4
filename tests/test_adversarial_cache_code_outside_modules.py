"""Adversarial catalogue: a cached ``proved`` outliving code that is no loaded module.

The verdict cache (capproof/verdict_cache.py) pickles the project's own functions by value (their
code included) and names a function outside the project by its module and qualified name, keying
that module's code by its loaded file (:func:`capproof.verdict_cache.library_inputs`, which walks
``sys.modules``). Code a spec runs from a file without leaving a module in ``sys.modules`` is keyed
by neither: its functions' globals are no project module's, their ``__module__`` names no loaded
module. Below, each edited after a first ``proved``:

- ``runpy.run_path`` of a helper file *inside* the project (``vendored/``; the project's rule says
  to run an engine's code rather than copy it, and ``run_path`` runs a file without importing its
  package);
- ``exec`` of a helper file's text in a fresh namespace (``{"__name__": "ext_helper"}``);
- ``importlib.util.module_from_spec`` + ``exec_module`` without ``sys.modules``.

Each was: proved, the helper edited, the cached verdict still ``proved`` while ``--no-cache`` (and
ints, at ``n == 37``) give a counterexample. Such a function is now no cache input: the obligation
is not cached and is decided on each run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HELPER = "def cap(n):\n    return 100\n"
EDITED = "def cap(n):\n    return 100 - (n == 37) * 70  # the engine's new release\n"
CLAIM = (
    "\n\n@obligation(domain={'n': Range(1, 100)})\ndef helper_cap(n):\n    return at_most(demand=n, capacity=cap(n))\n"
)


def _verdicts(*args: str) -> dict[str, str]:
    """``capproof prove spec`` in a fresh interpreter (as a user runs it twice: modules loaded anew)."""
    cmd = [sys.executable, "-m", "capproof", "prove", "spec", "--no-contracts", "--density", "off", "-j", "1"]
    result = subprocess.run([*cmd, "--json", "-", *args], capture_output=True, text=True, check=False)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return {ob["id"].split("::")[-1]: ob["verdict"] for ob in json.loads(result.stdout)["obligations"]}


LOADERS = [
    pytest.param(
        "run-path-of-a-file-inside-the-project",
        "vendored/adv_helper.py",
        "import os\nimport runpy\n\nfrom capproof import Range, obligation, at_most\n\n"
        "ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "cap = runpy.run_path(os.path.join(ROOT, 'vendored', 'adv_helper.py'))['cap']\n",
    ),
    pytest.param(
        "exec-in-a-fresh-namespace",
        ".vendor/adv_helper.py",
        "import os\n\nfrom capproof import Range, obligation, at_most\n\n"
        "H = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '.vendor', 'adv_helper.py')\n\n\n"
        "def _read(p):\n    with open(p) as h:\n        return h.read()\n\n\n"
        "_ns = {'__name__': 'ext_helper'}\nexec(compile(_read(H), H, 'exec'), _ns)\ncap = _ns['cap']\n",
    ),
    pytest.param(
        "module-from-spec-not-in-sys-modules",
        ".vendor/adv_helper.py",
        "import importlib.util\nimport os\n\nfrom capproof import Range, obligation, at_most\n\n"
        "H = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '.vendor', 'adv_helper.py')\n"
        "_spec = importlib.util.spec_from_file_location('adv_ext_helper', H)\n"
        "_mod = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mod)\ncap = _mod.cap\n",
    ),
]


@pytest.mark.slow  # three capproof runs in fresh interpreters per attempt (~8 s)
@pytest.mark.parametrize("name, helper, loader", LOADERS)
def test_a_cached_proof_is_not_reused_after_helper_code_outside_modules_changed(project, name, helper, loader):
    path = project / helper
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HELPER)
    (project / "spec" / "helper_spec.py").write_text(loader + CLAIM)
    assert _verdicts() == {"helper_cap": "proved"}
    path.write_text(EDITED)
    cached = _verdicts()
    assert _verdicts("--no-cache") == {"helper_cap": "counterexample"}  # ints: 37 > 30 at n == 37
    assert cached == {"helper_cap": "counterexample"}
