"""The engine facts of SGLang (:mod:`capproof.facts`): the facts SGLang's demand derivations rest on,
one record per fact and allocating file, with every path the derivation judged.

The derivations (:mod:`capproof.engines.sglang.demand`) record on each derived dimension the facts
it rests on (``demands[].facts``: ``fact``, ``checked``, ``paths`` as ``{"checked (how)": [...],
"not checked": [...]}``): ``backend_bs <= padded_bs`` per backend class (every call site of its
CUDA-graph entry methods, :mod:`capproof.engines.sglang.graph_calls`), the captured token count,
the DP-gather batch, the backend's ``max_bs``, the capture list. :func:`engine_facts` turns them
into fact records, nothing re-judged: a path listed under a ``checked`` key is ``checked`` (how
``executed`` when the key says ``executed``, else ``ast``), a path under a ``counterexample`` key
is a ``counterexample`` (the fact is **refuted**; the key names the run that showed it), a path
under ``not checked`` is ``not checked``; a fact the derivation recorded with no path at all stays
assumed.
The assumption a fact discharges is the name the SGLang obligations give an unchecked fact
(``spec/sglang_0_5_23_derived.py``: ``assumed: <fact>``); its scope is the allocating file.

``capproof inventory --engine sglang==X`` writes them next to the inventory
(``proofs/inventory/sglang-X.facts.json``) and ``--check`` fails when they are stale.
"""

from __future__ import annotations

import json
import re

from ...facts import fact_record, path_record

__all__ = ["engine_facts", "ASSUMED"]

#: The prefix the SGLang obligations give an unchecked fact's named assumption.
ASSUMED = "assumed: "


def _paths(paths: dict) -> list[dict]:
    out = []
    for key, sites in sorted((paths or {}).items()):
        result = (
            "checked"
            if key.startswith("checked")
            else ("counterexample" if key.startswith("counterexample") else "not checked")
        )
        how = "executed" if "executed" in key else "ast"
        for text in sites or []:
            head, _, rest = str(text).partition(" ")
            head = head.rstrip(":")
            # a site is ``file.py`` or ``file.py:line[s]``; a path without one keeps its whole text
            site = head if re.fullmatch(r"\S+\.py(?::[\d,-]+)?", head) else "?"
            out.append(path_record(site, (rest if site != "?" else str(text))[:200], how, result, key))
    return out


def engine_facts(entries) -> list[dict]:
    """Fact records (:func:`capproof.facts.fact_record`) from the ``demands[].facts`` of ``entries``
    (inventory entries with ``file`` and ``demands``): one per distinct fact, allocating file and
    set of paths, in a stable order."""
    seen: dict[tuple, dict] = {}
    for e in entries:
        for d in getattr(e, "demands", None) or []:
            if not isinstance(d, dict):
                continue
            for f in d.get("facts") or []:
                paths = f.get("paths") or {}
                key = (f["fact"], e.file, json.dumps(paths, sort_keys=True))
                if key in seen:
                    continue
                # status from the paths alone (a fact recorded checked without a path stays assumed)
                recs = _paths(paths)
                found = [
                    {
                        "site": p["site"],
                        "deployment": p["why"],
                        "values": p["sets"],
                        "reproduced": p["how"] == "executed",
                        "finding": (re.findall(r"finding \d+", p["why"]) or [""])[0],
                    }
                    for p in recs
                    if p["result"] == "counterexample"
                ]
                seen[key] = fact_record(f["fact"], [ASSUMED + f["fact"]], [e.file], recs, found)
    return [seen[k] for k in sorted(seen)]
