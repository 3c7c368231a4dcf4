"""Adversarial catalogue: a cached ``proved`` outliving an input outside the verdict cache's key.

The key (capproof/verdict_cache.py) covers the bytes of the *project's* modules an obligation
reaches (files under the working directory, not in a hidden directory), the environment, and
marks a verdict uncacheable when its model opens a file or lists a directory (audit events). Two
inputs a model reads are outside it:

- code outside the project: an engine package or a vendored helper on ``sys.path`` (the engine's
  own code, which the project's rule says to run rather than copy; here in a hidden ``.vendor``
  directory, as the real venv lives in ``.capproof/``): edited or upgraded, the cached verdict stays;
- the file system read without opening or listing: ``os.path.isfile``/``os.stat`` raise no audit
  event, so a model asking whether a checkpoint's ``added_tokens.json`` exists keeps its cached
  ``proved`` after the file appears.

Each: proved, the input changed, the cached verdict still ``proved`` while ``--no-cache`` (and
ints, at ``k == 37``) give a counterexample.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def _verdicts(*args: str, preexec=None) -> dict[str, str]:
    """``capproof prove spec`` in a fresh interpreter (as a user runs it twice: modules loaded anew)."""
    cmd = [sys.executable, "-m", "capproof", "prove", "spec", "--no-contracts", "--density", "off", "-j", "1"]
    result = subprocess.run(
        [*cmd, "--json", "-", *args], capture_output=True, text=True, check=False, preexec_fn=preexec
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return {ob["id"].split("::")[-1]: ob["verdict"] for ob in json.loads(result.stdout)["obligations"]}


#: Each test runs ``capproof prove`` three or four times in a fresh interpreter (3-6 s of CPU): the
#: fast tier keeps the command-line one, the others run in the slow tier.
SLOW = pytest.mark.slow


VENDORED_SPEC = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".vendor"))
from adv_enginelib import extra_slots
from capproof import Range, obligation, at_most, select

@obligation(domain={"k": Range(0, 40)})
def vendored_slots(k):
    return at_most(demand=select(k == 37, extra_slots(), 0), capacity=0)
"""


@SLOW
def test_a_cached_proof_is_not_reused_after_the_library_code_it_ran_changed(project):
    (project / ".vendor").mkdir()
    lib = project / ".vendor" / "adv_enginelib.py"
    lib.write_text("def extra_slots():\n    return 0\n")
    (project / "spec" / "vendored_spec.py").write_text(VENDORED_SPEC)
    assert _verdicts() == {"vendored_slots": "proved"}
    lib.write_text("def extra_slots():\n    return 1  # the engine's new release\n")
    cached = _verdicts()
    assert _verdicts("--no-cache") == {"vendored_slots": "counterexample"}  # ints: 1 > 0 at k == 37
    assert cached == {"vendored_slots": "counterexample"}


STAT_SPEC = """
import os
from capproof import Range, obligation, at_most, select

TOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "added_tokens.json")

@obligation(domain={"k": Range(0, 40)})
def tokenizer_slots(k):
    extra = 1 if os.path.isfile(TOK) else 0      # a checkpoint with added tokens needs one more slot
    return at_most(demand=select(k == 37, extra, 0), capacity=0)

@obligation(domain={"k": Range(0, 40)})
def tokenizer_size(k):
    try:
        extra = os.stat(TOK).st_size
    except OSError:
        extra = 0
    return at_most(demand=select(k == 37, extra, 0), capacity=0)
"""


@SLOW
def test_a_cached_proof_is_not_reused_after_a_file_it_stat_ed_appeared(project):
    (project / "spec" / "stat_spec.py").write_text(STAT_SPEC)
    assert _verdicts() == {"tokenizer_slots": "proved", "tokenizer_size": "proved"}
    (project / "spec" / "added_tokens.json").write_text('{"<extra>": 1}')
    cached = _verdicts()
    assert _verdicts("--no-cache") == {"tokenizer_slots": "counterexample", "tokenizer_size": "counterexample"}
    assert cached == {"tokenizer_slots": "counterexample", "tokenizer_size": "counterexample"}


AFFINITY_SPEC = """
import os
from capproof import Range, obligation, at_most, select

@obligation(domain={"k": Range(0, 40)})
def omp_threads(k):
    # a CPU backend sizing per-thread staging by the process's affinity mask
    threads = len(os.sched_getaffinity(0))
    return at_most(demand=select(k == 37, 2 - min(threads, 2), 0), capacity=0)
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to narrow"
)
@SLOW
def test_a_cached_proof_is_not_reused_under_a_narrower_cpu_affinity(project):
    (project / "spec" / "affinity_spec.py").write_text(AFFINITY_SPEC)
    assert _verdicts() == {"omp_threads": "proved"}
    one_cpu = {min(os.sched_getaffinity(0))}
    cached = _verdicts(preexec=lambda: os.sched_setaffinity(0, one_cpu))
    fresh = _verdicts("--no-cache", preexec=lambda: os.sched_setaffinity(0, one_cpu))
    assert fresh == {"omp_threads": "counterexample"}  # ints on one CPU: demand 1 > 0 at k == 37
    assert cached == {"omp_threads": "counterexample"}


ARGV_SPEC = """
import sys
from capproof import Range, obligation, at_most, select

@obligation(domain={"k": Range(0, 40)})
def argv_slots(k):
    selected = 1 if "-k" in sys.argv else 0      # a spec reading its command line
    return at_most(demand=select(k == 37, selected, 0), capacity=0)
"""


def test_a_cached_proof_is_not_reused_under_another_command_line(project):
    (project / "spec" / "argv_spec.py").write_text(ARGV_SPEC)
    assert _verdicts() == {"argv_slots": "proved"}
    cached = _verdicts("-k", "argv")
    assert _verdicts("--no-cache", "-k", "argv") == {"argv_slots": "counterexample"}
    assert cached == {"argv_slots": "counterexample"}


CLASS_DATA_SPEC = """
import json, os
from capproof import Range, obligation, at_most

_CFG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine.json")


def _load(key):
    with open(_CFG) as f:
        return json.load(f)[key]


class Limits:
    MAX_NUM_SEQS = _load("max_num_seqs")      # read once at import, as engine configs are


def seqs_capacity(limit=_load("max_num_seqs")):
    return limit


@obligation(domain={"k": Range(0, 40)})
def class_attr_limit(k):
    return at_most(demand=k, capacity=Limits.MAX_NUM_SEQS)


@obligation(domain={"k": Range(0, 40)})
def helper_default_limit(k):
    return at_most(demand=k, capacity=seqs_capacity())
"""


@SLOW
def test_a_cached_proof_is_not_reused_after_data_read_at_import_into_a_class_changed(project):
    """The key pickles module globals (callables aside) and the claim's own closures and defaults:
    a file read at import into a class attribute or a helper's default argument is in neither."""
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 40}')
    (project / "spec" / "class_data_spec.py").write_text(CLASS_DATA_SPEC)
    assert _verdicts() == {"class_attr_limit": "proved", "helper_default_limit": "proved"}
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 36}')
    cached = _verdicts()
    both = {"class_attr_limit": "counterexample", "helper_default_limit": "counterexample"}
    assert _verdicts("--no-cache") == both  # ints: k = 37 > 36
    assert cached == both


_LOADER = """
import functools, json
from capproof import Range, obligation, at_most

_CFG = __file__.rsplit("/", 1)[0] + "/engine.json"


def _load(key):
    with open(_CFG) as f:
        return json.load(f)[key]
"""
#: data read at import that the key's pickle of the module does not hold: a closure of a function
#: made at import, a ``functools.partial`` global (callable: skipped), a nested class's attribute,
#: an object whose ``__reduce__`` pickles it as "load again from this path", a function attribute, an ``lru_cache``'d
#: loader warmed at import (its cache is not data of the module). One module each: a module's data
#: is keyed as a whole.
HELD_AT_IMPORT = {
    "factory_closure": "def _const(v):\n    return lambda: v\n\n\nseqs_limit = _const(_load('max_num_seqs'))\n"
    "CAP = 'seqs_limit()'\n",
    "partial_global": "seqs_cap = functools.partial(min, _load('max_num_seqs'))\nCAP = 'seqs_cap(40)'\n",
    "nested_class": "class Engine:\n    class Limits:\n        MAX_NUM_SEQS = _load('max_num_seqs')\n\n\n"
    "CAP = 'Engine.Limits.MAX_NUM_SEQS'\n",
    "reduce_by_path": "class EngineConfig:\n    def __init__(self, path):\n        self.path = path\n"
    "        with open(path) as f:\n            self.max_num_seqs = json.load(f)['max_num_seqs']\n\n"
    "    def __reduce__(self):\n        return (EngineConfig, (self.path,))\n\n\nCONFIG = EngineConfig(_CFG)\n"
    "CAP = 'CONFIG.max_num_seqs'\n",
    "function_attribute": "def seqs_limit():\n    return seqs_limit.value\n\n\n"
    "seqs_limit.value = _load('max_num_seqs')\nCAP = 'seqs_limit()'\n",
    "lru_cache_loader": "@functools.lru_cache(maxsize=None)\ndef limits():\n    with open(_CFG) as f:\n"
    "        return json.load(f)\n\n\n_WARM = limits() is not None\nCAP = \"limits()['max_num_batched_tokens']\"\n",
}


@SLOW
def test_a_cached_proof_is_not_reused_after_data_held_at_import_outside_module_data_changed(project):
    """Each obligation's capacity is the engine config read at import; the config changes from 40 to
    36: ``--no-cache`` (and ints at k = 37) give a counterexample, the cache kept ``proved``."""
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 40, "max_num_batched_tokens": 40}')
    for name, held in HELD_AT_IMPORT.items():
        cap = held.rsplit("CAP = ", 1)[1].strip()[1:-1]
        body = held.rsplit("CAP = ", 1)[0]
        obligation = f'\n\n@obligation(domain={{"k": Range(0, 40)}})\ndef {name}(k):\n    return at_most(demand=k, capacity={cap})\n'
        (project / "spec" / f"held_{name}.py").write_text(_LOADER + "\n\n" + body + obligation)
    assert _verdicts() == dict.fromkeys(HELD_AT_IMPORT, "proved")
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 36, "max_num_batched_tokens": 36}')
    cached = _verdicts()
    assert _verdicts("--no-cache") == dict.fromkeys(HELD_AT_IMPORT, "counterexample")  # ints: k = 37 > 36
    assert cached == dict.fromkeys(HELD_AT_IMPORT, "counterexample")


@SLOW
def test_a_cached_bound_is_not_sufficient_after_data_held_in_a_closure_at_import_changed(project):
    """``capproof bound`` keeps its bounds in ``.capproof/bounds/`` under the same key: after the
    config read at import into a getter's closure changed from 40 to 36, it still reported min slack
    0 and "0 insufficient"; ``--no-cache`` reports slack -4 (k = 40 > 36)."""
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 40}')
    body, cap = HELD_AT_IMPORT["factory_closure"].rsplit("CAP = ", 1)
    obligation = (
        '\n\n@obligation(domain={"k": Range(0, 40)})\ndef factory_closure(k):\n'
        f"    return at_most(demand=k, capacity={cap.strip()[1:-1]})\n"
    )
    (project / "spec" / "held_factory_closure.py").write_text(_LOADER + "\n\n" + body + obligation)
    cmd = [sys.executable, "-m", "capproof", "bound", "spec"]

    def insufficient(*args: str) -> bool:
        out = subprocess.run([*cmd, *args], capture_output=True, text=True, check=False).stdout
        assert "bounded cases" in out, out
        return "0 insufficient" not in out

    assert not insufficient()
    (project / "spec" / "engine.json").write_text('{"max_num_seqs": 36}')
    cached = insufficient()
    assert insufficient("--no-cache")
    assert cached, "the cached bound still says sufficient"
