"""Adversarial catalogue: a model whose value depends on the process's string hash seed.

The order of a set of strings (and ``hash(str)``) changes with ``PYTHONHASHSEED``, which is random
per interpreter unless set. A model that takes "the first supported backend" of a set of names
gets one backend in the process that decides it and another in a fresh interpreter: ``capproof
prove`` answered ``proved`` in about half of its runs (``counterexample`` in the others), and the
verdict cache keeps whichever came first. "Proved" is a claim about a fresh interpreter, so a
proof under one seed where another seed's interpreter fails on ints is a false proof (and the
counterexample, shown under the other seed, does not replay under the first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SPEC = """
from capproof import Range, obligation, at_most, select

SUPPORTED_BACKENDS = {"flash_attn", "triton_attn"}  # a set of names, as engines keep them
PAGE_WIDTH = {"flash_attn": 16, "triton_attn": 32}


@obligation(domain={"k": Range(0, 40)})
def set_order_backend(k):
    default = next(iter(SUPPORTED_BACKENDS))  # "the first supported backend"
    return at_most(demand=select(k == 37, PAGE_WIDTH[default], 16), capacity=16)
"""

INTS = """
import sys
sys.path.insert(0, {tests!r})
from _soundness_harness import fails_on_ints
from capproof.loader import load_file
(ob,) = load_file({path!r})
print(fails_on_ints(ob, {{"k": 37}}, True), fails_on_ints(ob, {{"k": 37}}, False))
"""


def _env(seed: int) -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": str(seed)}


@pytest.mark.xfail(strict=True, reason="a verdict that depends on the string hash seed is proved (open)")
def test_a_model_depending_on_the_string_hash_seed_is_not_proved(tmp_path):
    path = tmp_path / "hash_seed_spec.py"
    path.write_text(SPEC)
    ints = INTS.format(tests=os.path.dirname(__file__), path=str(path))
    # on ints, in a fresh interpreter: holds under seed 0, fails under seed 4 (padded and alone)
    for seed, fails in ((0, "False False"), (4, "True True")):
        out = subprocess.run([sys.executable, "-c", ints], capture_output=True, text=True, env=_env(seed), check=True)
        assert out.stdout.split() == fails.split(), (seed, out.stdout, out.stderr)
    cmd = [sys.executable, "-m", "capproof", "prove", "--no-cache", "--no-contracts", "-j", "1", "--json", "-"]
    result = subprocess.run([*cmd, str(path)], capture_output=True, text=True, env=_env(0), check=False)
    (ob,) = json.loads(result.stdout)["obligations"]
    assert ob["verdict"] != "proved", "proved under PYTHONHASHSEED=0; a fresh interpreter under seed 4 fails on ints"
