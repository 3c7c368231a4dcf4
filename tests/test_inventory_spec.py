"""The obligations spec/_inventory.py's ``cover`` declares in spec/vllm_0_33_buffers.py, checked on
ints without a solver (fast tier; ``make mutation``'s cheap oracle for the spec/_inventory.py
helpers, docs/soundness.md).

Two oracles outside spec/_inventory.py:

- the inventory traced from vLLM 0.33.0 (proofs/inventory/vllm-0.33.0.json, read here with
  ``json``): at seeded random points of each obligation's domain, the claim's capacity replayed on
  ints is the entry's traced shape evaluated there (names bound through the ``read shape:``
  aliases the obligation cites), the demand is the family's demand, a fact stated on the
  allocation's size sees that capacity, and the claim holds exactly when the relation does;
- the committed report proofs/vllm_0_33_buffers.md (reviewed, and checked fresh by ``make
  verify``): each obligation's spec line, sources, covered entry, claim formula, domain,
  assumptions and description are the ones the report records, and the release is the
  inventory's own.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import re

import pytest

from capproof import loader
from capproof.domain import Vector
from capproof.encode import concrete_args, replay
from capproof.inventory import evaluate, expression_names
from capproof.obligation import Obligation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join("spec", "vllm_0_33_buffers.py")
INVENTORY = os.path.join("proofs", "inventory", "vllm-0.33.0.json")
REPORT = os.path.join("proofs", "vllm_0_33_buffers.md")
POINTS = 4


@pytest.fixture(scope="module")
def generated():
    """The inventory obligations of spec/vllm_0_33_buffers.py, loaded now (under an active mutant
    of ``make mutation`` the helpers run mutated), and the spec module's namespace."""
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        loader.ensure_project_on_path(ROOT)
        path = os.path.abspath(SPEC)
        loader._loaded.pop(path, None)
        items = loader.load_file(SPEC)
        assert isinstance(items, list), f"{SPEC} does not load: {items}"
        obs = [it for it in items if isinstance(it, Obligation) and "inventory" in it.tags]
        yield obs
    finally:
        os.chdir(old)


def _report_sections() -> dict[str, dict]:
    with open(os.path.join(ROOT, REPORT), encoding="utf-8") as fh:
        text = fh.read()
    out = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        m = re.match(r"`([^`]+)`", block)
        if not m:
            continue
        sec: dict = {"line": None, "sources": [], "covers": [], "domain": {}, "assumptions": [], "doc": []}
        line = re.search(r"^- spec: \[[^\]]+:(\d+)\]", block, re.M)
        sec["line"] = int(line.group(1)) if line else None
        lst = None
        for row in block.splitlines():
            if row.startswith("- sources:"):
                lst = "sources"
            elif row.startswith("- covers"):
                lst = "covers"
            elif row.startswith("  - ") and lst:
                sec[lst].append(row[4:].strip("`"))
            else:
                lst = None
            if row.startswith("> "):
                sec["doc"].append(row[2:])
        table = re.search(r"\n\| parameter \| domain \|\n\|---\|---\|\n((?:\|[^\n]*\n?)+)", block)
        for row in table.group(1).splitlines() if table else []:
            d = re.match(r"^\| `(\w+)` \| (.*) \|$", row)
            sec["domain"][d.group(1)] = d.group(2)
        listed = re.search(r"\nAssumptions \([^\n]*\n\n((?:- [^\n]*\n?)+)", block)
        for row in listed.group(1).splitlines() if listed else []:
            sec["assumptions"].append(
                re.sub(r" — \*\*restates the claim\*\*.*$", "", re.sub(r"^- (?:[✔·] )?", "", row))
            )
        code = re.search(r"Claim, as written in the spec file:\n\n```python\n(.*?)\n```", block, re.S)
        sec["formula"] = code.group(1) if code else None
        out[m.group(1)] = sec
    return out


@pytest.fixture(scope="module")
def report():
    return _report_sections()


@pytest.fixture(scope="module")
def inventory():
    with open(os.path.join(ROOT, INVENTORY), encoding="utf-8") as fh:
        data = json.load(fh)
    return data, {e["id"]: e for e in data["entries"]}


def test_every_generated_obligation_is_the_reported_one(generated, report, inventory):
    data, _ = inventory
    assert len(generated) > 300  # 334 today; an empty list would make the checks below vacuous
    for ob in generated:
        sec = report.get(ob.name)
        assert sec is not None, f"{ob.name} is not in {REPORT}"
        assert ob.file == SPEC and ob.line == sec["line"], ob.name
        assert ob.sources == sec["sources"], ob.name
        assert ob.covers == sec["covers"] and len(ob.covers) == 1, ob.name
        assert ob.sources[0] == f"inventory: {INVENTORY}::{ob.covers[0]}", ob.name
        assert ob.formula == sec["formula"], ob.name
        assert {k: d.describe() for k, d in ob.domain.items()} == sec["domain"], ob.name
        assert list(ob.assumptions) == sec["assumptions"], ob.name
        assert [ln.strip() for ln in ob.doc.splitlines() if ln.strip()] == [
            ln.strip() for ln in sec["doc"] if ln.strip()
        ], ob.name
        assert (ob.engine, ob.versions) == (data["engine"], f"=={data['version']}"), ob.name
        assert "inventory" in ob.tags
    generated_names = {ob.name for ob in generated}
    assert len(generated_names) == len(generated)


def _families() -> dict:
    """Every demand family by name: spec/_families.py's and those spec/vllm_0_33_buffers.py defines."""
    import sys

    import spec._families as fam
    from spec._inventory import Family

    spaces = [vars(fam)] + [
        vars(m)
        for m in list(sys.modules.values())
        if os.path.abspath(getattr(m, "__file__", None) or "") == os.path.join(ROOT, SPEC)
    ]
    out = {}
    for space in spaces:
        for obj in space.values():
            if isinstance(obj, Family):
                out.setdefault(obj.name, obj)
    return out


def _draw(domain, rng):
    """A random point: scalars first (each domain's ends among the choices), then each Vector's
    active entries (as many as its length parameter says)."""
    out = {}
    for k, d in domain.items():
        if isinstance(d, Vector):
            continue
        if hasattr(d, "cases"):
            out[k] = rng.choice(list(d.cases()))
        else:
            out[k] = rng.choice([d.lo, d.hi, rng.randint(d.lo, d.hi), rng.randint(d.lo, min(d.hi, d.lo + 64))])
    for k, d in domain.items():
        if isinstance(d, Vector):
            n = min(out[d.length], d.size) if d.length else d.size
            out[k] = [rng.choice([d.elem.lo, d.elem.hi, rng.randint(d.elem.lo, d.elem.hi)]) for _ in range(n)]
    return out


def test_claims_on_ints_are_the_traced_shapes_and_the_family_demand(generated, report, inventory):
    """At seeded random points (domain ends included) of each obligation's domain: the capacity
    the claim computes is the traced shape of its entry evaluated at the point, the demand is the
    family's, a fact on the allocation's size sees that capacity, and the claim holds exactly when
    ``demand <= capacity`` (a slice) or ``0 <= demand < capacity`` (an index) does."""
    _, entries = inventory
    families = _families()
    rng = random.Random(20261202)
    checked = with_family = capacity_facts = 0
    for ob in generated:
        sec = report[ob.name]
        entry = entries[sec["covers"][0]]
        fam_name = re.search(r"# demand family '([^']+)'", sec["formula"])
        # the family cover() was given (an input of the spec file, not a result)
        family = dict(zip(ob.func.__code__.co_freevars, (c.cell_contents for c in ob.func.__closure__)))["family"]
        if fam_name:
            assert family.name == fam_name.group(1), ob.name
        if family.name in families:
            assert families[family.name] is family, ob.name
        rel_line = sec["formula"].splitlines()[-1]
        aliases = dict(re.findall(r"^read shape: (\w+) = (.*) \([^()]*\)$", "\n".join(sec["sources"]), re.M))
        for _ in range(POINTS):
            point = _draw(ob.domain, rng)
            holds, values, _failed = replay(ob, point)
            args = concrete_args(ob, point)
            cap_key = next(k for k in values if re.fullmatch(rf"{re.escape(entry['attribute'])}\[\d+\]", k))
            dim = int(cap_key.rsplit("[", 1)[1][:-1])
            bound = {}
            for n in expression_names(entry["shape"][dim]):
                expr = aliases.get(n, n)
                bound[n] = (
                    point[expr] if expr in point else evaluate(expr, **{t: point[t] for t in expression_names(expr)})
                )
            cap = evaluate(entry["shape"][dim], **bound)
            assert values[cap_key] == cap, (ob.name, point)
            (need_key,) = [k for k in values if k != cap_key]
            need = values[need_key]
            if family is not None:
                params = inspect.signature(family.demand).parameters
                assert need == family.demand(**{p: args[p] for p in params}), (ob.name, point)
                assert need_key == family.demand_name
                with_family += 1
                for name, fact in family.facts.items():
                    fparams = inspect.signature(fact).parameters
                    if "capacity" in fparams:
                        want = fact(capacity=cap, **{p: args[p] for p in fparams if p != "capacity"})
                        got = ob.assumptions[name](**{p: args[p] for p in ob.assumption_params(name)})
                        assert bool(got) == bool(want), (ob.name, name, point)
                        capacity_facts += 1
            if rel_line.startswith("0 <= "):
                assert holds == (0 <= need < cap), (ob.name, point)
            else:
                assert holds == (need <= cap), (ob.name, point)
            checked += 1
    assert checked == POINTS * len(generated)
    assert with_family == checked and capacity_facts > 0, (with_family, capacity_facts)
