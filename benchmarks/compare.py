"""capproof vs Hypothesis vs exhaustive enumeration, and scaling curves.

Run with ``make bench`` (after ``bench.py``) or ``python benchmarks/compare.py [--quick]``; the parts
can run separately or in parallel (``--part hypothesis --shard 0/4`` ...), each keeping its results
in ``benchmarks/out/*.json``, and ``--part write`` renders them. Not run in CI. Writes
``benchmarks/out/compare.md`` (tables) and, when matplotlib is installed (``pip install -e
'.[bench]'``), ``benchmarks/out/compare.png`` (time ratios and scaling curves).

1. Every corpus counterexample obligation in spec/ (``expect="counterexample"`` with a ``case``):
   capproof's CPU time to its first counterexample (``result.first_counterexample``: the int
   probe's, capproof/probe.py, or the solver's first model replayed on ints) and to its minimised,
   replayed counterexample (``prove_obligation``, density off; median of ``--repeat`` runs after a
   warm-up), both from the start of ``prove_obligation``, vs Hypothesis (``max_examples`` 1000, 20 seeds)
   with two strategies: the generic one (each parameter drawn from its domain, a batch vector's
   length first, assumptions as ``assume``) and the best one a user would write for the bug class
   (benchmarks/strategies.py: routings built from their counts, saturated batches, lengths near
   their limit). Per strategy: how many seeds found a violation, the median CPU time to the first
   violation, and (first ``--shrink-seeds`` seeds) to the end of shrinking. Exhaustive enumeration
   on ints where the domain is finite and at most 200,000 points.
   ``--part fair --rows a,b`` re-measures the first counterexample of the rows named against
   Hypothesis's best strategy **interleaved** in one process (same load, niceness and clock; by
   default one Hypothesis seed's run, then one ``prove_obligation`` call, and so on: each after
   the other tool's work); ``--part write`` then takes those rows' capproof first and best-strategy
   first violations from ``benchmarks/out/fair.json`` (the other rows' Hypothesis data as
   ``--part hypothesis`` measured it).
2. Scaling: CPU time to prove a batch obligation vs the vector size (8 … 4096) on the bounded
   encoding and on the aggregate abstraction, and the 1024-expert MoE routing obligation pinned at
   8 … 1024 experts, bounded and with the aggregate abstraction tried first (it abandons: the
   per-expert rounding has no exact aggregate form, so the bounded encoding decides).

Times are ``time.process_time()`` of the measuring process (CPU, not wall): the machine is shared.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from capproof import Options  # noqa: E402
from capproof.domain import Choice, PowersOfTwo, Range, Vector  # noqa: E402
from capproof.loader import load, load_file  # noqa: E402
from capproof.prover import prove_obligation, replay  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
EXHAUSTIVE_LIMIT = 200_000


class _Found(Exception):
    pass


def _strategy(ob):
    from hypothesis import strategies as st

    def scalar(dom):
        if isinstance(dom, Range):
            return st.integers(dom.lo, dom.hi)
        return st.sampled_from(dom.cases())

    vectors = {n: d for n, d in ob.domain.items() if isinstance(d, Vector)}
    base = {n: scalar(d) for n, d in ob.domain.items() if n not in vectors}

    def with_vectors(point):
        parts = {}
        for n, d in vectors.items():
            size = point[d.length] if d.length else d.size
            parts[n] = st.lists(st.integers(d.elem.lo, d.elem.hi), min_size=size, max_size=size)
        return st.fixed_dictionaries({k: st.just(v) for k, v in point.items()} | parts)

    strat = st.fixed_dictionaries(base)
    if vectors:
        strat = strat.flatmap(with_vectors)
    return strat


def hypothesis_run(ob, seed: int, examples: int, strategy=None, shrink: bool = True) -> dict:
    """One Hypothesis run (``max_examples``, generate then, with ``shrink``, shrink): whether it found
    a violation, the CPU seconds to the first violation (``first``; the whole run when none), and to
    the end of the run (``shrunk``: shrinking included; ``None`` without ``shrink``)."""
    from hypothesis import HealthCheck, Phase, assume, given, settings
    from hypothesis import seed as hseed

    first: list[float] = []

    @hseed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy if strategy is not None else _strategy(ob))
    def check(point):
        try:
            holds, _, failed = replay(ob, point)
        except Exception:  # noqa: BLE001 - a raising model is a finding too, as for capproof
            holds, failed = False, []
        assume(not failed)
        if not holds:
            if not first:
                first.append(time.process_time() - started)
            raise _Found()

    started = time.process_time()
    try:
        check()
    except Exception:  # noqa: BLE001 - _Found (possibly grouped), or Unsatisfiable: found iff a violation was seen
        pass
    took = time.process_time() - started
    found = bool(first)
    return {"found": found, "first": first[0] if found else took, "shrunk": took if shrink else None}


def exhaustive(ob) -> tuple[int, int, float] | None:
    """(points, failing, CPU seconds) over a finite domain of at most EXHAUSTIVE_LIMIT points."""
    if not all(isinstance(d, (Choice, PowersOfTwo)) for d in ob.domain.values()):
        return None
    axes = [d.cases() for d in ob.domain.values()]
    total = 1
    for a in axes:
        total *= len(a)
    if total > EXHAUSTIVE_LIMIT:
        return None
    started = time.process_time()
    failing = 0
    for combo in itertools.product(*axes):
        holds, _, failed = replay(ob, dict(zip(ob.domain, combo)))
        failing += (not failed) and (not holds)
    return total, failing, time.process_time() - started


def corpus_obligations(keyword: str | None = None, shard: tuple[int, int] = (0, 1)) -> list:
    items, _ = load(["spec"])
    obs = [
        ob
        for ob in items
        if hasattr(ob, "domain") and ob.expect == "counterexample" and ob.case and (keyword is None or keyword in ob.id)
    ]
    return obs[shard[0] :: shard[1]]


def _save(name: str, data) -> None:
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)


def _load(name: str):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def capproof_part(repeat: int, keyword: str | None) -> dict:
    """capproof's CPU seconds to its first counterexample and to its minimised, replayed one:
    median of ``repeat`` in-process runs after one warm-up run of the same obligation (imports
    and Z3 start-up are paid once per process, as in ``capproof prove`` over a spec directory).

    Both are ``time.process_time()`` of this process from the start of ``prove_obligation`` (the
    clock and the start Hypothesis's "first" has in :func:`hypothesis_run`: its run's start, its
    own set-up included): ``first`` is ``result.first_counterexample.seconds`` (the int probe's
    point, or the solver's first model of a failing case replayed on ints, when the probe found
    none), ``capproof`` the whole call (the minimised, replayed counterexample; density off)."""
    out = {}
    for ob in corpus_obligations(keyword):
        opts = Options(density="off", contracts=False)
        r = prove_obligation(ob, opts)  # warm-up: lazy imports, Z3 context
        times, firsts, smallest = [], [], []
        for _ in range(repeat):
            started = time.process_time()
            r = prove_obligation(ob, opts)
            times.append(time.process_time() - started)
            firsts.append(r.first_counterexample.seconds if r.first_counterexample else None)
            smallest.append(r.smallest_seconds)
        ex = exhaustive(ob)
        fc = r.first_counterexample
        out[ob.id] = {
            "verdict": r.verdict.value,
            "capproof": statistics.median(times),
            "capproof_runs": times,
            "first": _median(firsts),
            "first_runs": firsts,
            "first_source": fc.source if fc else None,
            "first_points": fc.points if fc else None,
            "first_params": fc.to_json()["params"] if fc else None,
            # CPU s to the counterexample reported as the least (certified) in hand: the int-shrunk
            # seed when the solver certified it, else the whole call (ObligationResult.smallest_seconds)
            "smallest": _median(smallest),
            "smallest_runs": smallest,
            "smallest_params": r.counterexample.to_json()["params"] if r.counterexample else None,
            "minimized": r.counterexample.minimized if r.counterexample else None,
            "exhaustive": ex,
        }
        print(
            f"{ob.id}: capproof median {out[ob.id]['capproof']:.3f} s ({r.verdict.value}); first counterexample "
            + (f"{out[ob.id]['first'] * 1e3:.3f} ms ({fc.source}, {fc.points} probe points)" if fc else "none")
            + (f"; least in hand {out[ob.id]['smallest'] * 1e3:.3f} ms" if out[ob.id]["smallest"] is not None else "")
            + (f"; exhaustive {ex[0]} points {ex[2]:.2f} s" if ex else ""),
            flush=True,
        )
    return out


def hypothesis_part(
    seeds: int,
    examples: int,
    keyword: str | None,
    shard: tuple[int, int],
    shrink_seeds: int,
    save=lambda out: None,
    misses: int = 0,
    skip: frozenset = frozenset(),
) -> dict:
    """Per obligation and strategy (generic, best): the list of per-seed runs; the first
    ``shrink_seeds`` seeds shrink too (shrinking a 128-entry vector takes seconds). ``save(out)``
    after each obligation, so an interrupted run keeps what it finished. ``misses``: stop a
    strategy after that many seeds in a row found nothing (0: run every seed); ``skip``:
    obligations already measured (``--resume``)."""
    from strategies import BEST

    out = {}
    for ob in [ob for ob in corpus_obligations(keyword) if ob.id not in skip][shard[0] :: shard[1]]:
        name = ob.id.split("::")[1]

        def runs(strategy=None):
            out_runs = []
            for s in range(seeds):
                out_runs.append(hypothesis_run(ob, s, examples, strategy, shrink=s < shrink_seeds))
                if misses and len(out_runs) == misses and not any(r["found"] for r in out_runs):
                    break  # --stop-after-misses: this strategy does not find it; the table says 0/misses
            return out_runs

        entry = {"generic": runs()}
        if name in BEST:
            entry["best"] = runs(BEST[name](ob))
        out[ob.id] = entry
        save(out)
        for k, runs in entry.items():
            found = sum(r["found"] for r in runs)
            print(
                f"{ob.id} [{k}]: found {found}/{seeds}, median first {statistics.median(r['first'] for r in runs):.3f} s, "
                f"shrunk {_median(r['shrunk'] for r in runs)} s",
                flush=True,
            )
    return out


def fair_part(names: list[str], reps: int, seeds: int, examples: int, runs: int, order: str = "alternate") -> dict:
    """The first counterexample, capproof vs Hypothesis's best strategy, measured **interleaved**
    in this one process (same load, same niceness, same clock), ``reps`` rounds per obligation.
    ``order`` "alternate": one Hypothesis seed's run (``examples`` examples, generation only: the
    first violation comes before shrinking), then one ``prove_obligation`` call, and so on for
    ``seeds`` seeds, so that each measured call runs right after the other tool's (the same cache
    state and load for both); "blocked": the ``seeds`` Hypothesis runs, then ``runs``
    ``prove_obligation`` calls (each after the previous call's Z3 work, Hypothesis's runs each
    after its own previous run). One untimed warm-up of each first (a Hypothesis run on another
    seed, a ``prove_obligation`` call). Per obligation: every Hypothesis seed's run (``best``: the
    per-seed records the table reads, every round's), every capproof first (``first_runs``), and
    per round the two medians and their ratio."""
    from strategies import BEST

    obs = [ob for ob in corpus_obligations() if ob.id.split("::")[1] in names]
    missing = set(names) - {ob.id.split("::")[1] for ob in obs}
    if missing:
        raise SystemExit(f"not corpus counterexamples: {sorted(missing)}")
    opts = Options(density="off", contracts=False)
    out: dict = {ob.id: {"best": [], "first_runs": [], "rounds": []} for ob in obs}

    def capproof_first(ob):
        r = prove_obligation(ob, opts)
        return r.first_counterexample.seconds if r.first_counterexample else None

    for ob in obs:  # warm-up: imports, Z3 context, Hypothesis's own caches
        hypothesis_run(ob, 10_000, examples, _best(ob, BEST), shrink=False)
        prove_obligation(ob, opts)
    for rnd in range(reps):
        for ob in obs:
            load = os.getloadavg()[0]
            hyp, firsts = [], []
            for s in range(seeds):
                hyp.append(hypothesis_run(ob, s, examples, _best(ob, BEST), shrink=False))
                if order == "alternate":
                    firsts.append(capproof_first(ob))
            if order == "blocked":
                firsts = [capproof_first(ob) for _ in range(runs)]
            entry = out[ob.id]
            entry["best"] += hyp
            entry["first_runs"] += firsts
            h, c = statistics.median(r["first"] for r in hyp), _median(firsts)
            entry["rounds"].append(
                {
                    "hypothesis_first": h,
                    "capproof_first": c,
                    "ratio": c / h if c is not None else None,
                    "found": sum(r["found"] for r in hyp),
                    "load": load,
                }
            )
            print(
                f"round {rnd} {ob.id}: capproof first {c * 1e3:.3f} ms, Hypothesis best first {h * 1e3:.3f} ms "
                f"({entry['rounds'][-1]['found']}/{seeds} found): ratio {c / h:.3f}; load {load:.2f}",
                flush=True,
            )
    for oid, entry in out.items():
        entry["first"] = _median(entry["first_runs"])
        entry["ratio"] = statistics.median(r["ratio"] for r in entry["rounds"])
        print(
            f"{oid}: median over {reps} rounds: ratio {entry['ratio']:.3f} (capproof first {entry['first'] * 1e3:.3f} ms, "
            f"Hypothesis {statistics.median(r['first'] for r in entry['best']) * 1e3:.3f} ms)",
            flush=True,
        )
    return {
        "seeds": seeds,
        "examples": examples,
        "reps": reps,
        "runs": seeds if order == "alternate" else runs,
        "order": order,
        "rows": out,
    }


def _best(ob, best):
    name = ob.id.split("::")[1]
    return best[name](ob) if name in best else None


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def corpus_rows(cap: dict, hyp: dict, fair: dict | None = None) -> list[dict]:
    """One row per corpus counterexample. ``fair`` (``fair.json``, :func:`fair_part`): for its
    obligations, capproof's first counterexample and Hypothesis's best strategy's first violation
    are the ones measured interleaved (``row["fair"]``); shrinking times stay those of ``hyp``."""
    rows = []
    fair = fair or {}
    for oid, c in cap.items():
        h = hyp.get(oid)
        if not h:
            continue
        f = fair.get(oid)
        row = {
            "id": oid,
            "verdict": c["verdict"],
            "capproof": c["capproof"],
            # the least counterexample in hand (older capproof.json files: the whole call)
            "smallest": c.get("smallest") if c.get("smallest") is not None else c["capproof"],
            "exhaustive": c["exhaustive"],
            "first": f["first"] if f else c.get("first"),
            "first_source": c.get("first_source"),
            "fair": bool(f),
        }
        for k in ("generic", "best"):
            runs = h.get(k) or h["generic"]
            firsts = f["best"] if f and k == "best" else runs
            found = [r for r in firsts if r["found"]]
            row[k] = {
                "found": len(found),
                "seeds": len(firsts),
                "first": statistics.median(r["first"] for r in firsts),
                "shrunk": _median(r["shrunk"] for r in runs),
                "shrink_seeds": sum(r["shrunk"] is not None for r in runs),
                "first_found": statistics.median(r["first"] for r in found) if found else None,
                "own": k in h,
            }
        best = row["best"]
        row["ratio"] = row["smallest"] / best["first"] if best["first"] else None
        row["ratio_whole"] = c["capproof"] / best["first"] if best["first"] else None
        row["ratio_first"] = row["first"] / best["first"] if best["first"] and row["first"] is not None else None
        row["ratio_shrunk"] = c["capproof"] / best["shrunk"] if best["shrunk"] else None
        rows.append(row)
    return rows


SCALING_SPEC = '''
from capproof import Range, Choice, obligation, at_most, all_of
from capproof.arith import total, max_of
from capproof.domain import Vector

@obligation(domain={{"mnbt": Range(1, 2**16), "max_num_seqs": Range(1, {size}), "k": Choice(1, 3, 5),
                    "num_reqs": Range(1, {size}), "lens": Vector({size}, Range(1, 8), length="num_reqs")}},
            assumptions={{"requests": lambda num_reqs, max_num_seqs: num_reqs <= max_num_seqs,
                          "per request": lambda lens, k: all_of(*(d <= 1 + k for d in lens)),
                          "budget": lambda lens, mnbt: total(lens) <= mnbt}})
def slots_fit(mnbt, max_num_seqs, k, num_reqs, lens):
    """C3 after #14024: tokens + (K - 1) per request fit mnbt + (K - 1) * max_num_seqs."""
    return at_most(demand=total(lens) + (k - 1) * num_reqs, capacity=mnbt + (k - 1) * max_num_seqs)
'''


def scaling(sizes: list[int], experts: list[int], budget: float) -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, list[tuple[int, float]]] = {"bounded": [], "aggregate": []}
    tmp = tempfile.mkdtemp(prefix="capproof-bench-")
    for size in sizes:
        path = os.path.join(tmp, f"scaling_{size}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(SCALING_SPEC.format(size=size))
        (ob,) = load_file(path)
        for name, aggregate in (("aggregate", True), ("bounded", False)):
            if curves[name] and curves[name][-1][1] > budget:
                continue  # the previous size already took longer than the budget
            started = time.process_time()
            r = prove_obligation(ob, Options(aggregate=aggregate, density="off", contracts=False))
            took = time.process_time() - started
            curves[name].append((size, took))
            print(f"scaling {name} {size}: {took:.2f} s {r.verdict.value}", flush=True)
    items, _ = load(["spec/moe_align.py"], "vllm_sorted_ids_fit_every_routing")
    for name, aggregate in (("moe experts (bounded)", False), ("moe experts (aggregate tried first)", True)):
        pts: list[tuple[int, float]] = []
        for e in experts:
            if pts and pts[-1][1] > budget:
                break
            started = time.process_time()
            r = prove_obligation(
                items[0], Options(pins={"num_experts": e}, aggregate=aggregate, density="off", contracts=False)
            )
            pts.append((e, time.process_time() - started))
            print(f"{name} {e}: {pts[-1][1]:.2f} s {r.verdict.value}", flush=True)
        curves[name] = pts
    return curves


def _fmt(x: float | None) -> str:
    return "—" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def _fmt_r(x: float | None) -> str:
    """A ratio; under 0.01 with four decimals (not 0.000)."""
    return "—" if x is None else f"{x:.4f}" if x < 0.01 else _fmt(x)


def _fmt_s(x: float | None) -> str:
    """CPU seconds; under 10 ms in milliseconds."""
    return "—" if x is None else f"{x * 1e3:.2f} ms" if x < 0.01 else _fmt(x)


def write(rows: list[dict], curves: dict[str, list[tuple[int, float]]], meta: dict) -> None:
    os.makedirs(OUT, exist_ok=True)
    lines = [
        "# capproof vs Hypothesis (CPU seconds; see benchmarks/compare.py)",
        "",
        f"{meta.get('what', '')}",
        "",
        "capproof: first = median CPU s from the start of `prove_obligation` to its first counterexample "
        "(`result.first_counterexample`: the int probe's point, or when the probe found none the solver's first "
        "model of a failing case replayed on ints; source in brackets); minimised = median CPU s from the same "
        "start until the counterexample the report calls the least (minimised: certified by the solver, "
        "replayed) was in hand (`result.smallest_seconds`: the end of the int shrink when the shrunk seed is "
        "the point certified, else the whole call); certified = median CPU s of the whole call (the solver's "
        "certificate, every case decided; in process, after a warm-up run; density off). "
        "Hypothesis: found = seeds with a violation / seeds run (a strategy stops after "
        f"{meta.get('misses') or 'no'} seeds in a row that found none); first = median CPU s to the first "
        "violation (the whole run for seeds that found none); +shrink = median CPU s of the whole run, "
        f'shrinking included (first {meta.get("shrink_seeds")} seeds). "best" = the hand-written strategy '
        'in benchmarks/strategies.py ("=" when the generic one is the best written). Same clock both sides: '
        "`time.process_time()` of the measuring process from the start of the run. ratio first = capproof "
        "first / best first; ratio minimised = capproof minimised / best first; ratio certified = capproof "
        "certified / best first; vs generic = capproof minimised / generic first; ratio (+shrink) = capproof "
        'certified / best +shrink; target <= 0.1. "interleaved": capproof\'s first counterexample and the '
        "best strategy's first violations (found/seeds and first of the best column) measured alternately in one "
        f"process at the same load ({meta.get('fair') or 'none'}; `--part fair`), the other rows' Hypothesis "
        "data as measured by `--part hypothesis`.",
        "",
        "| obligation | capproof first | capproof minimised | capproof certified | generic: found, first, +shrink "
        "| best: found, first, +shrink | ratio first | ratio minimised | ratio certified | vs generic "
        "| ratio (+shrink) | target (first) | target (minimised) | exhaustive |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ex = r["exhaustive"]
        ex_s = f"{ex[1]} of {ex[0]} fail, {ex[2]:.2f} s" if ex else "—"
        g, b = r["generic"], r["best"]
        gs = f"{g['found']}/{g['seeds']}, {_fmt(g['first'])}, {_fmt(g['shrunk'])}"
        bs = (
            f"{b['found']}/{b['seeds']}, {_fmt(b['first'])}, {_fmt(b['shrunk'])}"
            if b["own"]
            else f"= (generic, interleaved: {b['found']}/{b['seeds']}, {_fmt(b['first'])})"
            if r.get("fair")
            else "="
        )
        met_first = "met" if r.get("ratio_first") is not None and r["ratio_first"] <= 0.1 else "not met"
        met = "met" if r["ratio"] is not None and r["ratio"] <= 0.1 else "not met"
        vs_generic = r["smallest"] / g["first"] if g["first"] else None
        first = (
            "—"
            if r.get("first") is None
            else (
                f"{r['first'] * 1e3:.3f} ms ({r.get('first_source')}" + ("; interleaved" if r.get("fair") else "") + ")"
            )
        )
        lines.append(
            f"| `{r['id']}` | {first} | {_fmt_s(r['smallest'])} | {_fmt_s(r['capproof'])} | {gs} | {bs} | "
            f"{_fmt_r(r.get('ratio_first'))} | {_fmt_r(r['ratio'])} | {_fmt_r(r.get('ratio_whole'))} | "
            f"{_fmt_r(vs_generic)} | {_fmt_r(r['ratio_shrunk'])} | {met_first} | {met} | {ex_s} |"
        )
    met = sum(1 for r in rows if r["ratio"] is not None and r["ratio"] <= 0.1)
    met_first = sum(1 for r in rows if r.get("ratio_first") is not None and r["ratio_first"] <= 0.1)
    met_whole = sum(1 for r in rows if r.get("ratio_whole") is not None and r["ratio_whole"] <= 0.1)
    lines += [
        "",
        f"Target (<= 0.1x the best strategy's time to its first violation) met on {met_first} of {len(rows)} "
        "corpus counterexamples for capproof's first counterexample, on "
        f"{met} of {len(rows)} for its minimised one (in hand), and on {met_whole} of {len(rows)} for the "
        "whole call (certified).",
        "",
        "## Scaling (CPU seconds, one run each)",
        "",
        "| curve | points (size: seconds) |",
        "|---|---|",
    ]
    for name, pts in curves.items():
        lines.append(f"| {name} | " + ", ".join(f"{x}: {y:.2f}" for x, y in pts) + " |")
    with open(os.path.join(OUT, "compare.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no PNG")
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 7), gridspec_kw={"width_ratios": [1.3, 1]})
    named = [r for r in rows if r["ratio"] is not None]
    labels = [r["id"].split("::")[1][:44] for r in named]
    ys = range(len(named))
    firsts = [r["ratio_first"] if r.get("ratio_first") is not None else float("nan") for r in named]
    a.barh(
        [y + 0.2 for y in ys],
        firsts,
        height=0.4,
        label="first counterexample vs best strategy's first violation",
        color=["tab:green" if r.get("first_source") == "int probe" else "tab:olive" for r in named],
    )
    colors = ["tab:red" if r["best"]["found"] == 0 else "tab:blue" for r in named]
    a.barh(
        [y - 0.2 for y in ys],
        [r["ratio"] for r in named],
        height=0.4,
        color=colors,
        label="minimised counterexample vs best strategy's first violation (red: it found none)",
    )
    a.set_yticks(list(ys), labels)
    a.axvline(1.0, color="grey", lw=0.8)
    a.axvline(0.1, color="black", lw=1.2, ls="--", label="target 0.1")
    a.set_xscale("log")
    a.set_xlabel("capproof / Hypothesis (best strategy) CPU time to its first violation (log)")
    a.tick_params(axis="y", labelsize=6)
    a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    a.set_title(meta.get("title", ""), fontsize=8)
    labels = {
        "bounded": "C3-like batch obligation, bounded vectors",
        "aggregate": "same, aggregate abstraction (all sizes)",
    }
    for name, pts in curves.items():
        if pts:
            b.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=labels.get(name, name))
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_xlabel("batch entries / experts")
    b.set_ylabel("CPU seconds")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "compare.png"), dpi=110, bbox_inches="tight")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds of 200 examples; sizes up to 1024")
    ap.add_argument("--budget", type=float, default=60.0, help="stop a curve after a point over this many seconds")
    ap.add_argument(
        "--part",
        choices=["all", "capproof", "hypothesis", "scaling", "fair", "write"],
        default="all",
        help="run one part (results kept in benchmarks/out/*.json) or only write the table/plot",
    )
    ap.add_argument("-k", dest="keyword", default=None, help="only corpus obligations whose id contains this")
    ap.add_argument("--shard", default="0/1", help="I/N: every N-th corpus obligation from the I-th (parallel runs)")
    ap.add_argument("--shrink-seeds", type=int, default=5, help="seeds whose Hypothesis runs also shrink")
    ap.add_argument(
        "--stop-after-misses",
        type=int,
        default=0,
        metavar="N",
        help="stop a strategy when its first N seeds found no violation (0: all seeds)",
    )
    ap.add_argument("--resume", action="store_true", help="skip obligations already in benchmarks/out/hypothesis*.json")
    ap.add_argument("--tag", default="", help="suffix of this run's hypothesis JSON file")
    ap.add_argument("--repeat", type=int, default=5, help="capproof runs per obligation (median)")
    ap.add_argument("--rows", default="", help="--part fair: comma-separated obligation names")
    ap.add_argument("--fair-reps", type=int, default=5, help="--part fair: interleaved rounds")
    ap.add_argument("--fair-runs", type=int, default=5, help="--part fair, blocked: prove_obligation calls per round")
    ap.add_argument(
        "--fair-order",
        choices=["alternate", "blocked"],
        default="alternate",
        help="--part fair: alternate one Hypothesis seed and one capproof call, or all seeds then all calls",
    )
    ap.add_argument(
        "--fair-file", default="fair.json", help="--part fair: the JSON file written (--part write reads fair.json)"
    )
    args = ap.parse_args()
    seeds, examples = (3, 200) if args.quick else (20, 1000)
    sizes = [8, 32, 128, 512, 1024] if args.quick else [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    experts = [8, 64, 256, 1024]
    i, n = (int(x) for x in args.shard.split("/"))
    tag = ("" if n == 1 else f"-{i}of{n}") + args.tag
    if args.part in ("all", "capproof"):
        _save("capproof.json", capproof_part(args.repeat, args.keyword))
    if args.part in ("all", "hypothesis"):

        def save(runs):
            _save(
                f"hypothesis{tag}.json",
                {"seeds": seeds, "examples": examples, "shrink_seeds": args.shrink_seeds, "runs": runs},
            )

        skip = (
            frozenset(
                oid
                for f in os.listdir(OUT)
                if f.startswith("hypothesis") and f.endswith(".json")
                for oid in _load(f)["runs"]
            )
            if args.resume
            else frozenset()
        )
        save(
            hypothesis_part(
                seeds, examples, args.keyword, (i, n), args.shrink_seeds, save, args.stop_after_misses, skip
            )
        )
    if args.part == "fair":
        _save(
            args.fair_file,
            fair_part(
                [x for x in args.rows.split(",") if x], args.fair_reps, seeds, examples, args.fair_runs, args.fair_order
            ),
        )
    if args.part in ("all", "scaling"):
        _save("scaling.json", scaling(sizes, experts, args.budget))
    cap, curves = _load("capproof.json"), _load("scaling.json")
    hyp = None
    for name in sorted(f for f in os.listdir(OUT) if f.startswith("hypothesis") and f.endswith(".json")):
        part = _load(name)
        hyp = part if hyp is None else hyp | {"runs": hyp["runs"] | part["runs"]}
    if cap and hyp:
        what = f"Hypothesis: {hyp['seeds']} seeds x {hyp['examples']} examples per strategy."
        fair = _load("fair.json")
        fair_what = (
            (
                f"{len(fair['rows'])} rows, {fair['reps']} rounds x ({fair['seeds']} seeds x {fair['examples']} "
                f"examples + {fair['runs']} capproof runs, {fair.get('order', 'blocked')})"
            )
            if fair
            else None
        )
        write(
            corpus_rows(cap, hyp["runs"], fair["rows"] if fair else None),
            curves or {},
            {
                "what": what,
                "title": f"{hyp['seeds']} seeds x {hyp['examples']} examples",
                "misses": args.stop_after_misses,
                "shrink_seeds": hyp.get("shrink_seeds"),
                "fair": fair_what,
            },
        )


if __name__ == "__main__":
    main()
