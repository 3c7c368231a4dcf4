"""Counterexamples as regression tests: JSON witnesses plus one generated pytest module.

``capproof counterexamples`` writes, into an output directory (default ``tests/regressions/``):

- one witness per counterexample of the run (and per found trigger witness, with a ``trigger``
  key), ``<spec path with dots>.<obligation>[+trigger][@pins].json``::

      {"capproof_witness": 1, "obligation": "spec/x.py::name", "spec": "spec/x.py", "name": "name",
       "case": ..., "expect": ..., "pins": {...}, "params": {...}, "values": {...},
       "relation": "W_buf == W_bt", "sources": [...]}

  ``params`` are the parameter values (ints, or lists of ints for vector parameters), ``values``
  the claim's named quantities there (ints);
- ``test_capproof_counterexamples.py``, regenerated from *every* witness in the directory (so runs
  with different ``-k``/``--set`` accumulate; delete a witness file to drop its row). Each row
  loads the obligation from its spec file with :mod:`capproof.loader`, replays the parameters on
  plain ints with :func:`capproof.prover.replay`, and asserts the claim is still violated with the
  same named values. A fixed formula makes its row fail.

Everything is deterministic: sorted keys, sorted rows, no timestamps, paths relative to the
project root (the working directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

__all__ = [
    "DEFAULT_OUT",
    "MODULE_NAME",
    "WITNESS_FORMAT",
    "WitnessError",
    "witnesses",
    "witness_filename",
    "read_witnesses",
    "render_module",
    "write_counterexamples",
]

#: Default output directory, inside the test suite so that ``pytest`` (``make test``) runs it.
DEFAULT_OUT = os.path.join("tests", "regressions")
#: The generated pytest module's file name.
MODULE_NAME = "test_capproof_counterexamples.py"
#: Value of the ``capproof_witness`` key: the witness format version.
WITNESS_FORMAT = 1


class WitnessError(ValueError):
    """A witness file in the output directory is not valid JSON or not a capproof witness."""


def _stem(spec_file: str) -> str:
    parts = [p for p in os.path.normpath(spec_file).split(os.sep) if p not in ("", ".", "..")]
    stem = ".".join(parts)
    return stem[:-3] if stem.endswith(".py") else stem


def _pin_text(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "-".join(str(v) for v in value)
    return str(value)


def witness_filename(w: dict[str, Any]) -> str:
    """File name of a witness: spec path with dots, obligation name, ``+trigger`` and ``@name=value,…`` pins."""
    name = f"{_stem(w['spec'])}.{w['name']}"
    if w.get("trigger"):
        name += f"+{w['trigger']}"
    if w.get("pins"):
        name += "@" + ",".join(f"{k}={_pin_text(v)}" for k, v in sorted(w["pins"].items()))
    safe = re.sub(r"[^A-Za-z0-9_.=,@+-]", "_", name)
    if safe != name:  # two names that sanitise alike ("y is 3!", "y_is_3_") must not share a file
        safe += "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return safe + ".json"


def witnesses(run_json: dict[str, Any]) -> list[dict[str, Any]]:
    """One witness dict per counterexample of ``run_json``, in run order.

    That is each obligation's counterexample, and each *found* trigger witness (``witnesses=`` on
    the obligation: a failing point where a named condition holds), which gets ``"trigger": name``.
    """
    out = []
    for e in run_json.get("obligations", []):
        if "::" not in e["id"]:
            continue
        spec, _, name = e["id"].rpartition("::")
        base = {
            "capproof_witness": WITNESS_FORMAT,
            "obligation": e["id"],
            "spec": spec,
            "name": name,
            "case": e.get("case"),
            "expect": e["expect"],
            "pins": dict(e.get("pins", {})),
            "relation": e.get("relation", ""),
            "sources": list(e.get("sources", [])),
        }
        points = [(None, e.get("counterexample"))]
        points += [(t["name"], t) for t in e.get("witnesses", []) if t.get("found")]
        for trigger, point in points:
            if not point:
                continue
            w = {**base, "params": dict(point["params"]), "values": dict(point["values"])}
            if trigger is not None:
                w["trigger"] = trigger
            out.append(w)
    return out


def _dump(w: dict[str, Any]) -> str:
    return json.dumps(w, indent=2, sort_keys=True) + "\n"


def read_witnesses(directory: str) -> list[tuple[str, dict[str, Any]]]:
    """``(file name, witness)`` for every ``*.json`` witness in ``directory``, sorted by file name.

    JSON files without the ``capproof_witness`` key are not witnesses and are ignored.
    Raises :class:`WitnessError` for a file that is not valid JSON or lacks a witness field.
    """
    found = []
    for fn in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if not fn.endswith(".json"):
            continue
        path = os.path.join(directory, fn)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise WitnessError(f"{path}: not a readable JSON witness: {exc}") from None
        if not isinstance(data, dict) or "capproof_witness" not in data:
            continue
        missing = [k for k in ("spec", "name", "params", "values") if k not in data]
        if missing:
            raise WitnessError(f"{path}: witness lacks {', '.join(missing)}")
        found.append((fn, data))
    return found


_HEADER = '''\
"""Counterexamples replayed as regression tests. Generated by `capproof counterexamples`; do not edit.

One row per JSON witness beside this file: the obligation is loaded from its spec file, its
parameters are replayed on plain ints with capproof.prover.replay, and the claim must still be
violated with the recorded named values. When a formula is fixed its row fails: delete that
witness file and run `capproof counterexamples` again to regenerate this module.
"""

import os

import pytest

from capproof.loader import LoadError, ensure_project_on_path, load_file
from capproof.prover import replay

#: The project root: spec paths below are relative to it.
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), {root!r}))

WITNESSES = [
{rows}]


def _obligation(spec, name):
    ensure_project_on_path(ROOT)
    items = load_file(os.path.join(ROOT, spec))
    assert not isinstance(items, LoadError), items.message
    found = [it for it in items if getattr(it, "name", None) == name]
    assert found, f"{{name}} is no longer declared in {{spec}}"
    return found[-1]


@pytest.mark.parametrize(("spec", "name", "params", "values"), WITNESSES)
def test_counterexample_still_violates(spec, name, params, values):
    holds, got, failed = replay(_obligation(spec, name), params)
    assert not failed, f"the witness no longer satisfies the assumptions {{failed}}"
    assert not holds, f"{{name}} now holds at {{params}}: the formula was fixed (delete its witness)"
    assert got == values
'''


def _row(fn: str, w: dict[str, Any]) -> str:
    ident = fn[:-5]
    return (
        f"    pytest.param(\n        {w['spec']!r}, {w['name']!r},\n"
        f"        {w['params']!r},\n        {w['values']!r},\n        id={ident!r},\n    ),\n"
    )


def render_module(rows: list[tuple[str, dict[str, Any]]], root_from_out: str) -> str:
    """Source of the generated pytest module for ``rows`` (``(file name, witness)``).

    ``root_from_out`` is the project root relative to the output directory (e.g. ``"../.."``).
    Values are written with ``repr``, so ints and lists of ints round-trip exactly.
    """
    body = "".join(_row(fn, w) for fn, w in rows)
    return _HEADER.format(root=root_from_out.replace(os.sep, "/"), rows=body)


def _write_if_changed(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return False
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def write_counterexamples(run_json: dict[str, Any], out: str = DEFAULT_OUT) -> dict[str, Any]:
    """Write the run's witnesses into ``out`` and regenerate the pytest module from all witnesses there.

    Returns ``{"witnesses": [paths of this run's witnesses], "changed": [paths rewritten],
    "module": path or None, "rows": number of rows, "unexpected": [obligation ids]}``. An
    unexpected counterexample (the obligation expects ``proved``) is not written: a test replaying
    it would pass while the model is wrong. No module is written while ``out`` holds
    no witness. Raises ``OSError`` (unwritable ``out``) or :class:`WitnessError` (a broken
    witness file already in ``out``).
    """
    os.makedirs(out, exist_ok=True)
    written, changed, unexpected = [], [], []
    for w in witnesses(run_json):
        if w["expect"] != "counterexample":
            # a claim expected to hold: a regression test replaying its witness would pass while the
            # model is wrong, so none is written; the run's exit code (1) and this list report it
            if w["obligation"] not in unexpected:
                unexpected.append(w["obligation"])
            continue
        path = os.path.join(out, witness_filename(w))
        if _write_if_changed(path, _dump(w)):
            changed.append(path)
        written.append(path)
    rows = read_witnesses(out)
    module = None
    if rows:
        module = os.path.join(out, MODULE_NAME)
        root = os.path.relpath(os.getcwd(), os.path.abspath(out))
        if _write_if_changed(module, render_module(rows, root)):
            changed.append(module)
    return {"witnesses": written, "changed": changed, "module": module, "rows": len(rows), "unexpected": unexpected}
