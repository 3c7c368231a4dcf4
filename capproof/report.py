"""Render results: terminal lines (icontract style) and the committed proofs/ reports.

Reports are rendered from the JSON form of a run, so ``capproof report --from run.json`` and a
fresh run give the same bytes. They hold no timings, so a diff shows only real changes.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Any

from .locate import definition_line, split_ref

__all__ = ["terminal_lines", "render_reports", "write_reports", "stale_reports"]

_MARK = {True: "ok  ", False: "FAIL"}


def terminal_lines(entry: dict[str, Any], kind: str = "obligation") -> list[str]:
    """One line per obligation or contract; a counterexample adds every name with its value.

    The first line starts with ``path:line:`` of the declaration in its spec file (as compilers
    and icontract do, so editors and CI annotators jump to it), then the mark, the verdict and the
    name (an obligation's name within that file, a contract's model id)."""
    expect = entry["expect"]
    verdict = entry["verdict"]
    note = "" if entry["ok"] else f" (expected {expect})"
    sizes = f" [{entry['encoding']}]" if entry.get("encoding") and verdict in ("proved", "counterexample") else ""
    where, name = "", entry["id"]
    if entry.get("file") and entry.get("line"):
        where = f"{entry['file']}:{entry['line']}: "
        if name.startswith(entry["file"] + "::"):
            name = name[len(entry["file"]) + 2 :]
        elif kind == "contract":
            name = f"contract {name}"
    lines = [f"{where}{_MARK[entry['ok']]} {verdict:<14} {name}{sizes}{note}"]
    cex = entry.get("counterexample")
    if kind == "obligation" and cex:
        lines.append(f"       {entry['message']}")
        width = max(len(k) for k in [*cex["params"], *cex["values"]] or ["x"])
        for name, value in cex["values"].items():
            lines.append(f"         {name:<{width}} = {value}")
        for name, value in cex["params"].items():
            if name in cex["values"]:
                continue
            lines.append(f"         {name:<{width}} = {value}")
        for w in entry.get("witnesses", []):
            lines.append(f"       trigger witness, {w['name']}: {_witness_text(w, cex)}")
        lines += [f"       {line}" for line in density_lines(entry.get("density"))]
    elif verdict != "proved" or not entry["ok"] or entry.get("restating_assumptions"):
        lines.append(f"       {entry['message']}")
    used_paths = [a[len("path: ") :] for a in entry.get("assumptions_used", []) if a.startswith("path: ")]
    if kind == "obligation" and verdict == "proved" and used_paths:
        lines.append(
            f"       {entry.get('paths', 0)} execution paths; path conditions in the proof: " + "; ".join(used_paths)
        )
    return lines


def _witness_text(w: dict[str, Any], cex: dict[str, Any]) -> str:
    """Every parameter of the witness (those equal to the counterexample's too, so the line is a
    complete point to replay), its named values, or why there is none."""
    if not w["found"]:
        return w.get("message") or "none"
    moved = {k for k, v in w["params"].items() if cex["params"].get(k) != v}
    same = "the counterexample's own point: " if not moved else ""
    label = "" if w.get("minimized", True) else " (not minimised: a minimisation query ran out of rlimit)"
    return (
        same
        + ", ".join(f"{k}={v}" for k, v in w["params"].items())
        + (" (" + ", ".join(f"{k}={v}" for k, v in w["values"].items()) + ")" if w.get("values") else "")
        + label
    )


def _share(failing: int, admitted: int) -> str:
    """``failing of admitted`` and its share; below 0.01% the share is exact (``1 in 2,096,129``),
    never a rounded ``0.00%``."""
    if not admitted:
        return f"{failing} of {admitted}"
    if failing and 100 * failing < 0.01 * admitted:
        ratio = f"1 in {admitted // failing:,}" if admitted % failing == 0 else f"{failing:,} in {admitted:,}"
        return f"{failing} of {admitted} ({ratio})"
    return f"{failing} of {admitted} ({100 * failing / admitted:.2f}%)"


def density_lines(density: dict[str, Any] | None) -> list[str]:
    """Human lines for a :func:`capproof.density.failure_density` record (empty for None)."""
    if not density:
        return []
    c = density["cases"]
    unknown = f" ({c['unknown']} more unknown)" if c.get("unknown") else ""
    scope = "pinned " if c.get("pinned") else ""
    if c["exact_domain_fraction"]:
        lines = [f"fails on {_share(c['failing'], c['admitted'])} admitted points of the finite domain (exact)"]
    else:
        lines = [f"{_share(c['failing'], c['admitted'])} admitted {scope}finite cases contain a failing point{unknown}"]
    for a in density["axes"]:
        lo, hi = a["range"]
        pinned = a["param"] in density.get("pinned_params", [])
        what = f"{a['param']} over {lo}..{hi}" + (
            " (pinned in this run; varied here, the others held)" if pinned else ""
        )
        if a["failing"] is None:
            lines.append(f"{what}: not computed ({a['message']})")
        else:
            lines.append(f"{what}: fails for {_share(a['failing'], a['admitted'])} admitted values [{a['method']}]")
    if density.get("skipped_vector_lengths"):
        lines.append("not counted (vector lengths): " + ", ".join(density["skipped_vector_lengths"]))
    return lines


def _spec_module(entry: dict[str, Any]) -> str:
    file = entry.get("file") or entry["id"].split("::")[0]
    return os.path.splitext(os.path.basename(file))[0]


def _md_value(value: object) -> str:
    return f"`{value}`"


_GITHUB_REF = re.compile(r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]+)$")


def _source_md(source: str) -> str:
    """``owner/repo#N`` becomes a link (GitHub redirects issues/N to the pull request); else code."""
    m = _GITHUB_REF.match(source)
    if m:
        return f"[{source}](https://github.com/{m.group(1)}/issues/{m.group(2)})"
    return f"`{source}`"


def _code_link(ref: str) -> str:
    """``models/x.py::name`` as a relative link to its ``def`` line (``../models/x.py#L12``)."""
    path, _ = split_ref(ref)
    line = definition_line(ref)
    anchor = f"#L{line}" if line else ""
    return f"[`{ref}`](../{path}{anchor})"


def _obligation_md(e: dict[str, Any]) -> list[str]:
    name = e["id"].split("::")[-1]
    out = [f"### `{name}`", ""]
    spec_link = f"[{e['file']}:{e['line']}](../{e['file']}#L{e['line']})" if e.get("file") else e["id"]
    out.append(f"- spec: {spec_link}")
    if e.get("file"):
        out.append(f"- reproduce: `capproof prove {e['file']} -k {name}`")
    if e.get("case"):
        out.append(f"- corpus case: `{e['case']}`")
    if e.get("sources"):
        out.append("- sources:")
        out += [f"  - {_source_md(src)}" for src in e["sources"]]
    if e.get("covers"):
        out.append("- covers (inventory entries, see [coverage.md](coverage.md)):")
        out += [f"  - `{c}`" for c in e["covers"]]
    if e.get("models"):
        out.append("- models:")
        out += [f"  - {_code_link(m)}" for m in e["models"]]
    if e.get("relation"):
        out.append(f"- claim: `{e['relation']}`")
    status = "as expected" if e["ok"] else f"**NOT AS EXPECTED** (expected {e['expect']})"
    sizes = f" ({e['encoding']})" if e.get("encoding") and e["verdict"] in ("proved", "counterexample") else ""
    out.append(f"- verdict: **{e['verdict']}{sizes}** ({status}); expected {e['expect']}")
    if e.get("encoding_note") and e["verdict"] in ("proved", "counterexample"):
        if e["encoding_note"].startswith("induction over the batch"):  # capproof.induction: says so itself
            out.append(f"- batches: {e['encoding_note']}")
        else:
            how = (
                "aggregate abstraction"
                if e["encoding"] in ("all batch sizes", "fixed vector sizes")
                else "bounded vectors"
            )
            out.append(f"- batches: {how}; {e['encoding_note']}")
    out.append(f"- result: {e['message']}")
    out.append(
        f"- cases: {e['cases']} ({e.get('excluded_cases', 0)} excluded by assumptions); rlimit {e.get('rlimit')} per query"
    )
    if e.get("doc"):
        out += ["", *[f"> {line}" if line else ">" for line in e["doc"].splitlines()]]
    if e.get("claim_source"):
        out += ["", "Claim, as written in the spec file:", "", "```python", *e["claim_source"].splitlines(), "```"]
    if e.get("domain"):
        out += ["", "| parameter | domain |", "|---|---|"]
        out += [f"| `{k}` | {v} |" for k, v in e["domain"].items()]
    used = set(e.get("assumptions_used", []))
    if e.get("assumptions") and e.get("verdict") == "counterexample":
        # no unsat core: every assumption holds at the counterexample, none is "needed"
        out += ["", "Assumptions (all hold at the counterexample):", ""]
        out += [f"- {a}" for a in e["assumptions"]]
    elif e.get("assumptions"):
        out += ["", "Assumptions (✔ = in the unsat core of some case, so the proof needs it; · = not needed):", ""]
        restating = set(e.get("restating_assumptions", []))
        out += [
            f"- {'✔' if a in used else '·'} {a}"
            + (" — **restates the claim** (each implies the other on the domain)" if a in restating else "")
            for a in e["assumptions"]
        ]
    else:
        out += ["", "Assumptions: none declared (the claim is checked on the whole domain)."]
    bounds = [
        a for a in e.get("assumptions_used", []) if a not in e.get("assumptions", []) and not a.startswith("path: ")
    ]
    if bounds:
        out += ["", "Domain bounds the proof used:", ""]
        out += [f"- `{b}`" for b in bounds]
    paths = [a[len("path: ") :] for a in e.get("assumptions_used", []) if a.startswith("path: ")]
    if e.get("paths", 0) > e.get("cases", 0) or paths:
        out += [
            "",
            f"Execution paths: the model branches on symbolic values; {e.get('paths', 0)} paths decided one by one"
            + (", using these path conditions:" if paths else "."),
            "",
        ]
        out += [f"- `{p}`" for p in paths]
    cex = e.get("counterexample")
    if cex:
        out += [
            "",
            "Counterexample (smallest parameter values, replayed on plain ints):"
            if cex.get("minimized", True)
            else "Counterexample (not certified minimal: a failing point, replayed on plain ints):",
            "",
            "| name | value |",
            "|---|---|",
        ]
        out += [f"| `{k}` | {_md_value(v)} |" for k, v in cex["params"].items()]
        out += [f"| **`{k}`** | {_md_value(v)} |" for k, v in cex["values"].items()]
        if cex.get("path"):
            out += ["", f"On the execution path `{cex['path']}`."]
        if e.get("witnesses"):
            out += ["", "Trigger witnesses (smallest batch taking each path at this configuration, replayed):", ""]
            out += [f"- {w['name']}: {_witness_text(w, cex)}" for w in e["witnesses"]]
        dens = density_lines(e.get("density"))
        if dens:
            out += ["", "Failure density (exact counts; the other parameters held at the counterexample):", ""]
            out += [f"- {line}" for line in dens]
    out.append("")
    return out


_CALL = re.compile(r"when calling ([\w.]+)\(.*?\)(?: \(which (?:returns|raises) .*?\))?(?= \(|$)")


def _stable(message: str) -> str:
    """CrossHair's message without the call's arguments: its search is randomised, so the
    arguments of a found counterexample vary between runs (the terminal and JSON keep them)."""
    return _CALL.sub(
        lambda m: (
            f"when calling {m.group(1)}(…) (arguments vary between runs; `capproof prove -k {m.group(1)}` shows one)"
        ),
        message,
    )


def _contract_md(e: dict[str, Any]) -> list[str]:
    status = "as expected" if e["ok"] else f"**NOT AS EXPECTED** (expected {e['expect']})"
    out = [f"### contract `{e['id']}`", ""]
    if e.get("file"):
        out.append(f"- declared: [{e['file']}:{e['line']}](../{e['file']}#L{e['line']})")
    if "::" in e["id"]:
        out.append(f"- model: {_code_link(e['id'])}")
    out.append(f"- verdict: **{e['verdict']}** ({status}); expected {e['expect']}; checked by CrossHair")
    out.append(f"- result: {_stable(e['message'])}")
    for c in e.get("conditions", []):
        out.append(
            f"  - {c['where']}: {c['state']}" + (f" — {_stable(c['message'])}" if c["state"] != "confirmed" else "")
        )
    out.append("")
    return out


def render_reports(run_json: dict[str, Any]) -> dict[str, str]:
    """``{"proofs/<spec module>.md": text}`` for every spec module in the run."""
    groups: "OrderedDict[str, dict[str, list]]" = OrderedDict()
    for e in run_json["obligations"]:
        groups.setdefault(_spec_module(e), {"obligations": [], "contracts": []})["obligations"].append(e)
    for e in run_json["contracts"]:
        groups.setdefault(_spec_module(e), {"obligations": [], "contracts": []})["contracts"].append(e)
    out: dict[str, str] = {}
    for module, items in sorted(groups.items()):
        all_items = items["obligations"] + items["contracts"]
        counts: dict[str, int] = {}
        for e in all_items:
            counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
        lines = [
            f"# Proof report: `spec/{module}.py`",
            "",
            "Generated by `capproof report`; do not edit. `make verify` fails when this file is stale.",
            "",
            "Verdicts: "
            + ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
            + f"; {sum(1 for e in all_items if e['ok'])} of {len(all_items)} as expected.",
            "",
            "| obligation | case | expect | verdict |",
            "|---|---|---|---|",
        ]
        for e in all_items:
            name = e["id"].split("::")[-1] if "::" in e["id"] else e["id"]
            lines.append(
                f"| `{name}` | {e.get('case') or '—'} | {e['expect']} | {e['verdict']}{'' if e['ok'] else ' ✗'} |"
            )
        lines.append("")
        if items["obligations"]:
            lines += ["## Obligations (Z3)", ""]
            for e in items["obligations"]:
                lines += _obligation_md(e)
        if items["contracts"]:
            lines += ["## Contracts (CrossHair)", ""]
            for e in items["contracts"]:
                lines += _contract_md(e)
        out[os.path.join("proofs", f"{module}.md")] = "\n".join(lines).rstrip() + "\n"
    return out


def write_reports(reports: dict[str, str], directory: str = "proofs", prune: bool = True) -> list[str]:
    """Write ``reports`` and (``prune``, a run over every spec file) delete reports of spec modules
    that no longer exist; returns changed paths."""
    os.makedirs(directory, exist_ok=True)
    changed = stale_reports(reports, directory, prune)
    for path, text in reports.items():
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    for path in _orphans(reports, directory) if prune else ():
        os.remove(path)
    return changed


#: Files in proofs/ that other commands generate (``capproof bound --write``, ``capproof coverage
#: --write``): never orphans here.
OTHER_GENERATED = ("bounds.md", "coverage.md")


def _orphans(reports: dict[str, str], directory: str) -> list[str]:
    if not os.path.isdir(directory):
        return []
    return sorted(
        os.path.join(directory, f)
        for f in os.listdir(directory)
        if f.endswith(".md") and f not in OTHER_GENERATED and os.path.join(directory, f) not in reports
    )


def stale_reports(reports: dict[str, str], directory: str = "proofs", prune: bool = True) -> list[str]:
    """Report paths whose committed text differs from ``reports`` (missing, and with ``prune``
    orphaned ones, included)."""
    stale = []
    for path, text in reports.items():
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except FileNotFoundError:
            pass
        stale.append(path)
    return stale + (_orphans(reports, directory) if prune else [])
