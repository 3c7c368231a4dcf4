"""Engine facts: a named assumption of the proofs, checked as an obligation over the engine's code.

A proof in ``spec/`` may rest on a named assumption about the engine, e.g. "padded requests <=
max_num_reqs (scheduler, dispatcher padding, dummy runs)". Such an assumption often restates the
claim (capacity ``max_num_reqs`` against the demand ``num_reqs_padded``), so on its own the proof
says nothing about the engine. An **engine fact** turns the assumption into an obligation over the
engine's code: every **path** that sets the quantity (a site in the engine's source) is checked,
by running the engine's code (``how: executed``) or by reading its source (``how: ast``), and the
fact says which paths were checked, which were not, and which gave a counterexample.

``capproof inventory`` (real tier) writes the facts of an engine release next to its inventory
(:func:`facts_path`: ``proofs/inventory/<engine>-<version>.facts.json``); ``inventory --check``
fails when that file is stale, and ``capproof coverage`` reads it (:mod:`capproof.coverage`):

- a fact is **checked** when every path is checked and none gave a counterexample; the assumptions
  it names (``assumptions``) then stop counting as assumptions for the entries in its ``scope``
  (a proof resting only on checked facts is a proof over the engine's code, not a restatement);
- it is **refuted** when some path gave a counterexample (a finding: ``counterexamples``);
- otherwise it is **assumed**, listed with the paths not checked, and never counts.

One assumption may be split into several facts with disjoint scopes: the same words ("padded
requests") name different quantities in different parts of an engine (the runner's step count,
attention metadata's request count, another runner's), and each is checked on its own paths.

The document (JSON, sorted keys, no timestamps)::

    {"engine": "vllm", "version": "0.33.0", "facts": [
      {"fact": "<what is claimed, one line>",
       "assumptions": ["<named assumption of spec/ obligations it discharges>", ...],
       "scope": ["<file or directory prefix, or id, of the inventory entries it is about>", ...],
       "paths": [{"site": "<file>:<line>", "sets": "<what that site computes>",
                  "how": "executed" | "ast", "result": "checked" | "not checked" | "counterexample",
                  "why": "<why it holds, or where the reading stopped>"}, ...],
       "counterexamples": [{"site", "deployment", "values", "reproduced": bool, "finding"}, ...]}]}

Nothing here reads an engine: the engine modules (``capproof/engines/<engine>/``) build the records.
Errors: :class:`FactsInputError` for a file that is not such a document.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from .errors import CapproofError

__all__ = [
    "FactsInputError",
    "RESULTS",
    "HOW",
    "facts_path",
    "path_record",
    "fact_record",
    "status",
    "unchecked_paths",
    "dumps",
    "read",
    "discharged",
    "validate",
]

#: A path's result.
RESULTS = ("checked", "not checked", "counterexample")
#: How a path was judged: the engine's code run (on concrete or symbolic sizes), or its source read.
HOW = ("executed", "ast")


class FactsInputError(CapproofError):
    """A facts file that cannot be read or has the wrong form (one line, exit 2)."""


def facts_path(inventory_path: str) -> str:
    """Where the facts of the inventory at ``inventory_path`` live (``X.json`` -> ``X.facts.json``)."""
    base = inventory_path[:-5] if inventory_path.endswith(".json") else inventory_path
    return base + ".facts.json"


def path_record(site: str, sets: str, how: str, result: str, why: str = "") -> dict[str, str]:
    """One path of a fact. ``how`` in :data:`HOW`, ``result`` in :data:`RESULTS` (ValueError otherwise)."""
    if how not in HOW:
        raise ValueError(f"path {site}: how {how!r} is not one of {HOW}")
    if result not in RESULTS:
        raise ValueError(f"path {site}: result {result!r} is not one of {RESULTS}")
    return {"site": site, "sets": sets, "how": how, "result": result, "why": why}


def fact_record(
    fact: str,
    assumptions: Iterable[str],
    scope: Iterable[str],
    paths: Iterable[dict[str, str]],
    counterexamples: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A fact (module docstring); ``status`` is computed from the paths, never stored."""
    rec = {
        "fact": fact,
        "assumptions": sorted(set(assumptions)),
        "scope": sorted(set(scope)),
        "paths": list(paths),
        "counterexamples": list(counterexamples),
    }
    validate(rec)
    return rec


def status(fact: dict[str, Any]) -> str:
    """``checked`` (every path checked, no counterexample), ``refuted`` (a counterexample) or ``assumed``."""
    results = [p.get("result") for p in fact.get("paths") or []]
    if fact.get("counterexamples") or "counterexample" in results:
        return "refuted"
    if results and all(r == "checked" for r in results):
        return "checked"
    return "assumed"


def unchecked_paths(fact: dict[str, Any]) -> list[dict[str, str]]:
    """The paths not checked or refuted."""
    return [p for p in fact.get("paths") or [] if p.get("result") != "checked"]


def validate(fact: Any) -> None:
    """Raise :class:`FactsInputError` unless ``fact`` has the form of the module docstring."""
    if not isinstance(fact, dict) or not isinstance(fact.get("fact"), str):
        raise FactsInputError("a fact is an object with a string 'fact'")
    for key in ("assumptions", "scope", "paths"):
        if not isinstance(fact.get(key), list):
            raise FactsInputError(f"fact {fact['fact']!r}: '{key}' is not a list")
    for p in fact["paths"]:
        if not isinstance(p, dict) or p.get("how") not in HOW or p.get("result") not in RESULTS:
            raise FactsInputError(f"fact {fact['fact']!r}: path {p!r} lacks how in {HOW} or result in {RESULTS}")


def dumps(facts: Iterable[dict[str, Any]], engine: str, version: str) -> str:
    """The JSON text of a facts file (sorted keys, facts in the given order)."""
    facts = list(facts)
    for f in facts:
        validate(f)
    return json.dumps({"engine": engine, "version": version, "facts": facts}, indent=1, sort_keys=True) + "\n"


def read(path: str) -> list[dict[str, Any]]:
    """The facts of ``path``; ``[]`` when the file does not exist. FactsInputError on a bad file."""
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FactsInputError(f"facts {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
        raise FactsInputError(f"facts {path}: expected an object with a 'facts' list")
    for f in data["facts"]:
        try:
            validate(f)
        except FactsInputError as exc:
            raise FactsInputError(f"facts {path}: {exc}") from None
    return data["facts"]


def in_scope(fact: dict[str, Any], entry_file: str, entry_id: str | None = None) -> bool:
    """Whether an inventory entry allocated in ``entry_file`` (id ``entry_id``) is in the fact's
    scope: a prefix match on a file or a directory (a directory prefix ends with ``/``), or an
    entry id (a scope item holding ``::``) equal to ``entry_id``."""
    for s in fact.get("scope") or []:
        if "::" in s:
            if s == entry_id:
                return True
        elif entry_file == s or (s.endswith("/") and entry_file.startswith(s)):
            return True
    return False


def discharged(facts: Iterable[dict[str, Any]], entry_file: str, entry_id: str | None = None) -> set[str]:
    """The named assumptions that are checked facts for an entry allocated in ``entry_file`` (id
    ``entry_id``): some fact in scope names the assumption and is checked, and no fact in scope
    naming it is not."""
    named: dict[str, list[str]] = {}
    for f in facts:
        if in_scope(f, entry_file, entry_id):
            for a in f.get("assumptions") or []:
                named.setdefault(a, []).append(status(f))
    return {a for a, st in named.items() if st and all(s == "checked" for s in st)}


def facts_for(
    facts: Iterable[dict[str, Any]], assumption: str, entry_file: str, entry_id: str | None = None
) -> list[dict[str, Any]]:
    """The facts naming ``assumption`` whose scope holds the entry (``entry_file``, ``entry_id``)."""
    return [f for f in facts if assumption in (f.get("assumptions") or []) and in_scope(f, entry_file, entry_id)]
