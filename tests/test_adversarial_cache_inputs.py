"""Adversarial catalogue: a cached verdict must not outlive an input the model reads.

capproof prove reuses a stored verdict when nothing in its key changed (capproof/verdict_cache.py:
the obligation, options, pins, the sources and data of the modules it reaches, and the ``CAPPROOF_*``
variables). A model that reads any other variable of the environment (as vLLM's models read
``vllm.envs``, the ``VLLM_*`` variables) depends on an input outside the key: proved under one value, the cached ``proved`` was reused under a value where the
claim fails on ints. The key now covers the environment (per-session shell and pytest variables aside).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from capproof.cli import main

SPEC = """
import os
from capproof import Range, obligation, at_most

@obligation(domain={"a": Range(0, 100)})
def env_limit(a):
    return at_most(demand=a, capacity=int(os.environ.get("VLLM_ADVERSARIAL_CAP", "100")))
"""


def _verdict(*args: str) -> str:
    result = CliRunner().invoke(
        main, ["prove", "spec", "--no-contracts", "--density", "off", "-j", "1", "--json", "-", *args]
    )
    assert result.exit_code in (0, 1), result.output
    (ob,) = json.loads(result.output)["obligations"]
    return ob["verdict"]


def test_a_cached_proof_is_not_reused_after_the_environment_it_read_changed(project, monkeypatch):
    (project / "spec" / "env_spec.py").write_text(SPEC)
    monkeypatch.setenv("VLLM_ADVERSARIAL_CAP", "100")
    assert _verdict() == "proved"  # a <= 100 holds on 0..100
    monkeypatch.setenv("VLLM_ADVERSARIAL_CAP", "36")
    cached = _verdict()
    assert _verdict("--no-cache") == "counterexample"  # what ints say: fails from a == 37
    assert cached == "counterexample"  # the cache must agree


FILE_SPEC = """
import json, os
from capproof import Range, obligation, at_most

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "caps.json")

def capacity():
    with open(_PATH) as f:  # the engine's config file, read when the model runs
        return json.load(f)["max_num_batched_tokens"]

@obligation(domain={"a": Range(0, 100)})
def tokens_fit(a):
    return at_most(demand=a, capacity=capacity())
"""


def test_a_proof_that_read_a_file_is_not_cached(project):
    """The key covers module sources and data, not the files a model opens: a verdict that read
    one (the ``open`` audit event from the project's code while deciding it) is not stored."""
    (project / "spec" / "json_cap.py").write_text(FILE_SPEC)
    caps = project / "spec" / "caps.json"
    caps.write_text('{"max_num_batched_tokens": 100}')
    assert _verdict() == "proved"
    caps.write_text('{"max_num_batched_tokens": 36}')
    assert _verdict() == "counterexample"  # what ints say: fails from a == 37


LISTDIR_SPEC = """
import os
from capproof import Range, obligation, at_most, select

_SHARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shards")

@obligation(domain={"k": Range(0, 40)})
def shard_count(k):
    # a model counting checkpoint shards in a directory, as loaders glob *.safetensors
    shards = len([f for f in os.listdir(_SHARDS) if f.endswith(".safetensors")])
    return at_most(demand=select(k == 37, shards, 0), capacity=0)
"""


# slow (about 2 s of CPU: two proving runs); the environment and file-read tests of this file keep it fast
@pytest.mark.slow
def test_a_proof_that_listed_a_directory_is_not_reused_after_the_directory_changed(project):
    """``os.listdir`` reads the file system without opening a file: its audit event marks the
    verdict uncacheable as a file read does, so a shard added afterwards gives the counterexample
    ``--no-cache`` (and ints) give at 37, not a reused ``proved``."""
    (project / "spec" / "listdir_spec.py").write_text(LISTDIR_SPEC)
    (project / "spec" / "shards").mkdir()
    assert _verdict() == "proved"
    (project / "spec" / "shards" / "model-00001-of-00001.safetensors").write_text("")
    cached = _verdict()
    assert _verdict("--no-cache") == "counterexample"
    assert cached == "counterexample"
