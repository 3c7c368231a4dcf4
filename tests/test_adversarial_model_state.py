"""Adversarial catalogue: a model's own state must not carry from one evaluation to the next.

capproof evaluates a model many times in one process (the int probe, the symbolic paths, the
second opinion, replays). A model that keeps state between calls (a memo keyed by only some of
its arguments, as engine helpers memoise per block size; a ``functools.cache``d getter of the
current config, as vLLM's are; a module-level generator) computes on
the symbolic run from what an earlier int evaluation left, not from its arguments. "On ints" a
point means the model run at that point in a fresh interpreter: there each claim below fails at
``37``, and each was proved. ``capproof prove`` (the runner) checks the project's module state
around an item (tests/test_adversarial_batch_state.py, ``KEPT``); the Python API's
``capproof.prove(obligation)`` decides it through the same runner code (it decided it in-process,
unchecked, and proved each).
"""

from __future__ import annotations

import sys

import pytest
from _soundness_harness import HEADER, fails_on_ints

import capproof.loader as loader
from capproof import Options, Verdict, prove
from capproof.loader import load_file

CASES = {
    "memo-keyed-by-block-size-only": (
        """
_BLOCKS = {}

def blocks_per_req(max_len, block_size):
    if block_size not in _BLOCKS:          # memo keyed by the block size alone
        _BLOCKS[block_size] = cdiv(max_len, block_size)
    return _BLOCKS[block_size]

@obligation(domain={"max_len": Range(1, 80), "block_size": Choice(16)})
def fits(max_len, block_size):
    return at_most(demand=blocks_per_req(max_len, block_size) * block_size, capacity=32 + 64 * (max_len != 37))
""",
        {"max_len": 37, "block_size": 16},
    ),
    "cached-getter-of-the-current-config": (
        """
import functools

class ModelConfig:
    def __init__(self, max_model_len):
        self.max_model_len = max_model_len

_CURRENT = [None]

def set_current_config(cfg):
    _CURRENT[0] = cfg

@functools.cache
def max_blocks_per_req():            # vLLM-style cached getter of the current config
    return cdiv(_CURRENT[0].max_model_len, 16)

@obligation(domain={"max_model_len": Range(1, 80)})
def table_fits(max_model_len):
    set_current_config(ModelConfig(max_model_len))
    return at_most(demand=max_blocks_per_req() * 16, capacity=32 + 64 * (max_model_len != 37))
""",
        {"max_model_len": 37},
    ),
    "generator-consumed-across-evaluations": (
        """
def gen():
    yield False
    while True:
        yield True

G = gen()

@obligation(domain={"a": Range(0, 100)})
def reads(a):
    if next(G):
        return True
    return a != 37
""",
        {"a": 37},
    ),
}


@pytest.fixture(autouse=True)
def _forget_spec_modules():
    """The spec modules these tests import stay out of ``sys.modules`` afterwards: a later test's
    runner reaches every module through ``sys`` and would meet their generators and memos."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("capproof_spec."):
            del sys.modules[name]


def _fresh(path):
    """The obligation of ``path`` imported anew (its module state as after import)."""
    loader._loaded.pop(__import__("os").path.abspath(path), None)
    (ob,) = load_file(path)
    return ob


@pytest.mark.parametrize("name", list(CASES))
def test_a_proof_holds_at_a_point_evaluated_in_a_fresh_module(spec_file, name):
    body, point = CASES[name]
    path = spec_file(HEADER + body, f"adv_state_{name.replace('-', '_')}.py")
    result = prove(_fresh(path), Options(density="off"))
    assert fails_on_ints(_fresh(path), point)  # what a fresh interpreter says at the point
    assert result.verdict is not Verdict.PROVED, f"proved, but fails at {point} evaluated fresh"


# State a model keeps inside a C object: the first evaluation in a fresh interpreter sees one value,
# every later one (the symbolic run, after the int probe) another. The runner's module-state check
# catches iterators, hashlib, queues, StringIO, locks, arrays, bytearrays, deques and a
# ``random.Random`` instance (a C base's state, through the object's own reduction); a callable
# object is data too (a sqlite3 connection, a bound method's object, a partial's arguments), and a
# draw from a global generator (``random``'s, NumPy's) while deciding is seen: each an error.
C_STATE = [
    pytest.param(
        "random-instance",
        """
import random
RNG = random.Random(0)
FIRST = random.Random(0).random()
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = RNG.random() == FIRST          # True on the first evaluation in a process only
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "random-module-functions",
        """
import random
random.seed(0)
FIRST = random.Random(0).getrandbits(32)
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = random.getrandbits(32) == FIRST
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "random-module-function-imported-by-name",
        """
import random
from random import randrange
random.seed(0)
FIRST = random.Random(0).randrange(1000)
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = randrange(1000) == FIRST
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "numpy-global-generator",
        """
import numpy as np
np.random.seed(0)
FIRST = int(np.random.RandomState(0).randint(1000))
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = int(np.random.randint(1000)) == FIRST
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "bound-method-of-an-iterator",
        """
import itertools
NEXT = itertools.count().__next__       # a callable: not skipped as code
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = NEXT() == 0
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "partial-holding-a-list",
        """
import functools
ADD = functools.partial(list.append, [])
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = len(ADD.args[0]) == 0
    ADD(1)
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "sqlite-in-memory",
        """
import sqlite3
DB = sqlite3.connect(":memory:")
DB.execute("create table t(x)")
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = DB.execute("select count(*) from t").fetchone()[0] == 0
    DB.execute("insert into t values (1)")
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
    pytest.param(
        "hashlib-object",
        """
import hashlib
H = hashlib.sha256()
EMPTY = hashlib.sha256().hexdigest()
@obligation(domain={"k": Range(0, 40)})
def m(k):
    v = H.hexdigest() == EMPTY
    H.update(b"x")
    return at_most(demand=select(all_of(k == 37, v), 1, 0), capacity=0)
""",
    ),
]


@pytest.mark.parametrize("name, body", C_STATE)
def test_state_kept_in_a_c_object_does_not_carry_between_evaluations(spec_file, name, body):
    path = spec_file(HEADER + body, f"adv_cstate_{name.replace('-', '_')}.py")
    assert fails_on_ints(_fresh(path), {"k": 37})  # the first evaluation in a fresh interpreter
    result = prove(_fresh(path), Options(density="off"))
    assert result.verdict is not Verdict.PROVED, "proved, but fails at k=37 evaluated fresh"


STATE_SPEC = """
from capproof import Range, obligation, at_most, select, all_of

_SEEN = []  # requests already planned in this process (a per-process memo)


@obligation(domain={"max_model_len": Range(1, 16384), "k": Range(0, 40)},
            engine="vllm", versions="==0.33.0", expect="proved")
def staging_first_plan(max_model_len, k):
    first = len(_SEEN) == 0
    _SEEN.append(1)
    return at_most(demand=select(all_of(max_model_len == 4097, k == 37, first), 1, 0), capacity=0)
"""


def test_check_config_is_not_safe_for_a_model_keeping_state_between_its_evaluations(tmp_path):
    """``capproof prove`` makes this an error (module state changed while deciding it); ``check-config
    --spec`` answered ``safe`` (exit 0): the int probe's earlier evaluations filled ``_SEEN``, so the
    symbolic run never saw a first evaluation, which fails in a fresh interpreter at
    max_model_len=4097 (the line's value), k=37."""
    import subprocess

    from click.testing import CliRunner

    from capproof.cli import main

    path = tmp_path / "state_spec.py"
    path.write_text(STATE_SPEC)
    code = (
        f"import sys; sys.path.insert(0, {str(__file__).rsplit('/', 1)[0]!r})\n"
        "from _soundness_harness import fails_on_ints\nfrom capproof.loader import load_file\n"
        f"(ob,) = load_file({str(path)!r})\n"
        "print(fails_on_ints(ob, {'max_model_len': 4097, 'k': 37}, True))\n"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "True", fresh.stdout + fresh.stderr  # a fresh interpreter's first evaluation
    argv = ["vllm", "serve", "m", "--max-model-len", "4097"]
    result = CliRunner().invoke(main, ["check-config", "-j", "1", "--spec", str(path), "--", *argv])
    assert result.exit_code != 0, result.output
