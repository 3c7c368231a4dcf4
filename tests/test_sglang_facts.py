"""SGLang's engine facts (capproof/engines/sglang/facts.py): the facts the demand derivations record
on each derived dimension, as capproof.facts records: one per fact and allocating file, a path per
site, the status from the paths alone, and the assumption named as the SGLang obligations name it."""

from __future__ import annotations

from types import SimpleNamespace

from capproof.engines.sglang.facts import engine_facts
from capproof.facts import discharged, status, validate

BS = "backend_bs <= padded_bs (a backend graph method's bs is the batch the runner captures or replays)"
FILE = "sglang/srt/layers/attention/my_backend.py"


def _entry(file, *facts):
    return SimpleNamespace(file=file, demands=[{"dim": 0, "facts": list(facts)}])


def test_a_fact_with_an_unchecked_site_is_assumed_and_names_the_obligations_assumption():
    fact = {
        "fact": BS,
        "checked": False,
        "paths": {
            "checked (ast; build_replay_fb_view run)": ["sglang/srt/runner.py:15 capture_one_shape -> x (ok)"],
            "not checked": [
                "sglang/srt/eager.py:8 run_eager -> x: no call of run_eager",
                "sglang/srt/dp.py execute: max_batch_size = max(...) (not read)",
                "sglang/srt/runner.py: capture_one_shape(bs) ...",
                "the scheduler's gather (not read)",
            ],
        },
    }
    (rec,) = engine_facts([_entry(FILE, fact), _entry(FILE, fact)])  # the same fact twice: one record
    validate(rec)
    assert rec["assumptions"] == ["assumed: " + BS] and rec["scope"] == [FILE]
    assert [(p["site"], p["how"], p["result"]) for p in rec["paths"]] == [
        ("sglang/srt/runner.py:15", "ast", "checked"),
        ("sglang/srt/eager.py:8", "ast", "not checked"),
        ("sglang/srt/dp.py", "ast", "not checked"),
        ("sglang/srt/runner.py", "ast", "not checked"),
        ("?", "ast", "not checked"),
    ]
    assert rec["paths"][-1]["sets"] == "the scheduler's gather (not read)"
    assert status(rec) == "assumed"
    assert discharged([rec], FILE) == set()


def test_every_site_checked_discharges_only_in_its_file_and_no_path_stays_assumed():
    ok = {"fact": "state", "checked": True, "paths": {"checked (ast)": ["sglang/srt/runner.py:7"]}}
    bare = {"fact": "bare", "checked": True, "paths": {}}
    recs = engine_facts([_entry(FILE, ok, bare)])
    by = {r["fact"]: r for r in recs}
    assert status(by["state"]) == "checked" and status(by["bare"]) == "assumed"
    assert discharged(recs, FILE) == {"assumed: state"}
    assert discharged(recs, "sglang/srt/other.py") == set()


def test_a_path_under_a_counterexample_key_refutes_the_fact_and_is_recorded_as_found():
    """A derivation that ran a counterexample lists the path under a ``counterexample (how ...)``
    key: the path's result is ``counterexample`` (how ``executed`` when the key says so), the fact is
    refuted with one counterexample naming its site and finding, and nothing is discharged."""
    fact = {
        "fact": "tokens",
        "checked": False,
        "paths": {
            "not checked": ["sglang/srt/decode.py: capture_one_shape(bs) ..."],
            "counterexample (executed: X.m run, finding 9)": ["sglang/srt/prefill.py:1786 capture -> m: 64 > 8"],
        },
    }
    (rec,) = engine_facts([_entry(FILE, fact)])
    validate(rec)
    by_site = {p["site"]: p for p in rec["paths"]}
    assert (by_site["sglang/srt/prefill.py:1786"]["result"], by_site["sglang/srt/prefill.py:1786"]["how"]) == (
        "counterexample",
        "executed",
    )
    assert by_site["sglang/srt/decode.py"]["result"] == "not checked"
    assert status(rec) == "refuted"
    (found,) = rec["counterexamples"]
    assert found["site"] == "sglang/srt/prefill.py:1786" and found["finding"] == "finding 9" and found["reproduced"]
    assert discharged([rec], FILE) == set()
