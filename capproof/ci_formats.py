"""CI output formats of a run: JUnit XML (``prove --junit``) and SARIF 2.1.0 (``prove --sarif``).

Both are rendered from the JSON form of a run (:meth:`capproof.runner.RunResult.to_json`), like
the proofs/ reports.

JUnit: one ``<testsuite>`` per spec file, one ``<testcase>`` per obligation and per contract
(classname = spec file, name = obligation name or ``contract <target>``). A verdict that differs
from its expectation (``proved`` vs ``counterexample``) is a ``<failure>``; ``unknown``,
``vacuous`` and ``error`` are an ``<error>``. Message = the one-line result; the body lists every
named value of the counterexample. Bad ``--set``/selection input is one ``<error>`` testcase in
a ``capproof`` suite. Written with `junitparser <https://pypi.org/project/junitparser/>`_.

SARIF: only entries whose verdict is *not as expected* are results (level ``error``, kind
``fail``), so a kept historical bug (``expect="counterexample"``, found as expected) is not
flagged. Each result points at the obligation's spec file and line, names the models it uses as
related locations, and carries the counterexample in ``message.text`` and
``properties.counterexample``. Bad input becomes a tool execution notification. No timestamps or
absolute paths: the same run gives the same bytes.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from typing import Any

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite

from .locate import definition_line, split_ref
from .report import terminal_lines

__all__ = ["junit_xml", "write_junit", "sarif_log", "write_sarif", "SARIF_SCHEMA_URI", "RULES"]

SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

#: SARIF rule id -> (short description, full description). A result's rule says how its verdict
#: differs from the expectation.
RULES: dict[str, tuple[str, str]] = {
    "unexpected-counterexample": (
        "A capacity claim expected to hold has a counterexample",
        "Z3 found parameter values (replayed on plain ints) for which the buffer is too small "
        'or the widths differ; the claim was declared expect="proved".',
    ),
    "counterexample-not-found": (
        "An expected counterexample (kept historical bug) was not found",
        'The obligation documents a buggy formula (expect="counterexample") but Z3 proved the '
        "claim: the model or the claim changed.",
    ),
    "unknown": (
        "The solver could not decide the obligation",
        "Z3 exhausted its rlimit or gave up on some case; an unknown is never a proof.",
    ),
    "vacuous": (
        "The assumptions admit no configuration",
        "Every case is excluded by the assumptions, so a proof would say nothing.",
    ),
    "error": (
        "The obligation or contract could not be checked",
        "The spec failed to import, the claim is malformed, a divisor can be zero, or the model "
        "raised; the message names the file and line.",
    ),
}


# --------------------------------------------------------------------------------------- JUnit


def _name(entry: dict[str, Any], kind: str) -> str:
    if kind == "contract":
        return f"contract {entry['id']}"
    return entry["id"].split("::")[-1] if "::" in entry["id"] else "import"


def _suite_of(entry: dict[str, Any]) -> str:
    return entry.get("file") or entry["id"].split("::")[0]


_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (e.g. terminal escape codes from a
    model's exception message), each shown as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _testcase(entry: dict[str, Any], kind: str) -> TestCase:
    case = TestCase(
        _xml_text(_name(entry, kind)), classname=_xml_text(_suite_of(entry)), time=float(entry.get("seconds", 0.0))
    )
    body = _xml_text("\n".join(line.strip() for line in terminal_lines(entry, kind)))
    if not entry["ok"]:
        verdict = entry["verdict"]
        message = _xml_text(entry["message"])
        if verdict in ("proved", "counterexample"):
            result = Failure(f"expected {entry['expect']}, got {verdict}: {message}", "verdict-mismatch")
        else:
            result = Error(f"{verdict}: {message}", verdict)
        result.text = body
        case.result = [result]
    case.system_out = body
    return case


def junit_xml(run_json: dict[str, Any]) -> JUnitXml:
    """A :class:`junitparser.JUnitXml` with one suite per spec file (see the module docstring)."""
    suites: dict[str, TestSuite] = {}
    entries = [(e, "obligation") for e in run_json.get("obligations", [])]
    entries += [(e, "contract") for e in run_json.get("contracts", [])]
    for entry, kind in entries:
        name = _suite_of(entry)
        if name not in suites:
            suites[name] = TestSuite(name)
        suites[name].append(_testcase(entry, kind))  # counted once below (add_testcase recounts each time)
    if run_json.get("usage_errors"):
        suite = suites.setdefault("capproof", TestSuite("capproof"))
        for i, message in enumerate(run_json["usage_errors"]):
            case = TestCase(f"usage {i + 1}", classname="capproof", time=0.0)
            case.result = [Error(_xml_text(message), "usage")]
            suite.append(case)
    xml = JUnitXml("capproof")
    for suite in suites.values():
        suite.update_statistics()
        xml.add_testsuite(suite)
    xml.update_statistics()
    return xml


def write_junit(run_json: dict[str, Any], path: str) -> None:
    """Write :func:`junit_xml` to ``path``. Raises ``OSError`` if it cannot be written."""
    junit_xml(run_json).write(path, pretty=True)


# --------------------------------------------------------------------------------------- SARIF


def _rule_id(entry: dict[str, Any]) -> str:
    verdict = entry["verdict"]
    if verdict == "counterexample":
        return "unexpected-counterexample"
    if verdict == "proved":
        return "counterexample-not-found"
    return verdict if verdict in RULES else "error"


def _physical(path: str, line: int | None) -> dict[str, Any]:
    loc: dict[str, Any] = {
        "artifactLocation": {"uri": urllib.parse.quote(path.replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}
    }
    if line and line > 0:
        loc["region"] = {"startLine": int(line)}
    return {"physicalLocation": loc}


def _cex_text(cex: dict[str, Any] | None) -> str:
    if not cex:
        return ""
    values = ", ".join(f"{k}={v}" for k, v in cex["values"].items())
    params = ", ".join(f"{k}={v}" for k, v in cex["params"].items())
    return f" Counterexample: {values + '; ' if values else ''}{params}."


def _result(entry: dict[str, Any], kind: str, rule_index: dict[str, int]) -> dict[str, Any]:
    rule = _rule_id(entry)
    file = entry.get("file") or entry["id"].split("::")[0]
    text = f"{entry['id']}: expected {entry['expect']}, got {entry['verdict']}: {entry['message']}" + (
        _cex_text(entry.get("counterexample")) if kind == "obligation" else ""
    )
    props: dict[str, Any] = {
        "kind": kind,
        "id": entry["id"],
        "expect": entry["expect"],
        "verdict": entry["verdict"],
        "case": entry.get("case"),
        "sources": list(entry.get("sources", [])),
    }
    if kind == "obligation":
        props["relation"] = entry.get("relation", "")
        props["pins"] = dict(entry.get("pins", {}))
        props["counterexample"] = entry.get("counterexample")
        props["witnesses"] = list(entry.get("witnesses", []))
        props["models"] = list(entry.get("models", []))
    result: dict[str, Any] = {
        "ruleId": rule,
        "ruleIndex": rule_index[rule],
        "kind": "fail",
        "level": "error",
        "message": {"text": text},
        "locations": [_physical(file, entry.get("line"))],
        "partialFingerprints": {"capproofEntry/v1": f"{kind}:{entry['id']}"},
        "properties": props,
    }
    if "::" in entry["id"] or kind == "contract":
        result["locations"][0]["logicalLocations"] = [
            {"name": _name(entry, kind), "fullyQualifiedName": entry["id"], "kind": "function"}
        ]
    related = [entry["id"]] if kind == "contract" else list(entry.get("models", []))
    if related:
        result["relatedLocations"] = [
            {"id": i + 1, **_physical(split_ref(ref)[0], definition_line(ref)), "message": {"text": ref}}
            for i, ref in enumerate(related)
        ]
    return result


def sarif_log(run_json: dict[str, Any], version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log (a JSON-ready dict) for the run; see the module docstring."""
    rule_ids = list(RULES)
    rule_index = {r: i for i, r in enumerate(rule_ids)}
    rules = [
        {
            "id": r,
            "name": "".join(part.capitalize() for part in r.split("-")),
            "shortDescription": {"text": RULES[r][0]},
            "fullDescription": {"text": RULES[r][1]},
            "defaultConfiguration": {"level": "error"},
        }
        for r in rule_ids
    ]
    results = [_result(e, "obligation", rule_index) for e in run_json.get("obligations", []) if not e["ok"]]
    results += [_result(e, "contract", rule_index) for e in run_json.get("contracts", []) if not e["ok"]]
    summary = run_json.get("summary", {})
    invocation: dict[str, Any] = {
        "executionSuccessful": not run_json.get("usage_errors"),
        "toolExecutionNotifications": [
            {"level": "error", "message": {"text": message}} for message in run_json.get("usage_errors", [])
        ],
    }
    if "exit_code" in summary:
        invocation["exitCode"] = int(summary["exit_code"])
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {"name": "capproof", "version": version, "semanticVersion": version, "rules": rules}
                },
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def write_sarif(run_json: dict[str, Any], path: str, version: str) -> None:
    """Write :func:`sarif_log` as indented JSON to ``path``. Raises ``OSError`` if it cannot be written."""
    text = json.dumps(sarif_log(run_json, version), indent=2) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
