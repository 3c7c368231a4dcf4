"""capproof vs Hypothesis vs exhaustive enumeration, and scaling curves (capproof issue 12).

Run with ``make bench`` (after ``bench.py``) or ``python benchmarks/compare.py [--quick]``.
Not run in CI. Writes ``benchmarks/out/compare.md`` (tables) and, when matplotlib is installed
(``pip install -e '.[bench]'``), ``benchmarks/out/compare.png`` (time ratios and scaling curves).

1. Every corpus counterexample obligation in spec/ (``expect="counterexample"`` with a ``case``):
   capproof's CPU time to its counterexample (``prove_obligation``, density off) vs Hypothesis
   (``max_examples`` 1000, 20 seeds; the strategy draws each parameter from its domain, a batch
   vector's length first, and rejects points that violate an assumption — the strategy a user
   would write from the declaration): how many seeds found a violation, and the median CPU time
   per seed. Exhaustive enumeration on ints where the domain is finite and at most 200,000 points.
2. Scaling: CPU time to prove a batch obligation vs the vector size (8 … 4096) on the bounded
   encoding and on the aggregate abstraction, and the 1024-expert MoE routing obligation pinned at
   8 … 1024 experts (bounded: the per-expert rounding has no aggregate form).

Times are ``time.process_time()`` of this process (CPU, not wall): the machine is shared.
"""

from __future__ import annotations

import argparse
import itertools
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


def hypothesis_run(ob, seed: int, examples: int) -> tuple[bool, float]:
    """(found a violation, CPU seconds) for one Hypothesis run."""
    from hypothesis import HealthCheck, Phase, assume, given, settings
    from hypothesis import seed as hseed

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(_strategy(ob))
    def check(point):
        try:
            holds, _, failed = replay(ob, point)
        except Exception:  # noqa: BLE001 - a raising model is a finding too, as for capproof
            raise _Found() from None
        assume(not failed)
        if not holds:
            raise _Found()

    started = time.process_time()
    try:
        check()
        found = False
    except _Found:
        found = True
    except Exception:  # noqa: BLE001 - Unsatisfiable (assumptions reject everything) = not found
        found = False
    return found, time.process_time() - started


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


def corpus_table(seeds: int, examples: int) -> list[dict]:
    items, _ = load(["spec"])
    rows = []
    for ob in items:
        if not hasattr(ob, "domain") or ob.expect != "counterexample" or not ob.case:
            continue
        started = time.process_time()
        r = prove_obligation(ob, Options(density="off", contracts=False))
        cap = time.process_time() - started
        runs = [hypothesis_run(ob, s, examples) for s in range(seeds)]
        found = sum(f for f, _ in runs)
        hyp = statistics.median(t for _, t in runs)
        ex = exhaustive(ob)
        rows.append({"id": ob.id, "case": ob.case, "verdict": r.verdict.value, "capproof": cap,
                     "hyp_found": found, "seeds": seeds, "hypothesis": hyp, "ratio": cap / hyp if hyp else None,
                     "exhaustive": ex})
        print(f"{ob.id}: capproof {cap:.2f} s ({r.verdict.value}); Hypothesis found {found}/{seeds}, "
              f"median {hyp:.2f} s" + (f"; exhaustive {ex[0]} points {ex[2]:.2f} s" if ex else ""), flush=True)
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


def scaling(sizes: list[int], budget: float) -> dict[str, list[tuple[int, float]]]:
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
    experts = []
    items, _ = load(["spec/moe_align.py"], "vllm_sorted_ids_fit_every_routing")
    for e in (8, 64, 256, 1024):
        if experts and experts[-1][1] > budget:
            break
        started = time.process_time()
        r = prove_obligation(items[0], Options(pins={"num_experts": e}, density="off", contracts=False))
        experts.append((e, time.process_time() - started))
        print(f"experts {e}: {experts[-1][1]:.2f} s {r.verdict.value}", flush=True)
    curves["moe experts (bounded)"] = experts
    return curves


def write(rows: list[dict], curves: dict[str, list[tuple[int, float]]]) -> None:
    os.makedirs(OUT, exist_ok=True)
    lines = ["# capproof vs Hypothesis (CPU seconds; see benchmarks/compare.py)", "",
             "| obligation | capproof | Hypothesis found | Hypothesis median | ratio | exhaustive |", "|---|---|---|---|---|---|"]
    for r in rows:
        ex = r["exhaustive"]
        ex_s = f"{ex[1]} of {ex[0]} fail, {ex[2]:.2f} s" if ex else "—"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "—"
        lines.append(f"| `{r['id']}` | {r['capproof']:.2f} | {r['hyp_found']}/{r['seeds']} | {r['hypothesis']:.2f} | {ratio} | {ex_s} |")
    lines += ["", "## Scaling (CPU seconds)", "", "| curve | points (size: seconds) |", "|---|---|"]
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
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    named = [r for r in rows if r["ratio"] is not None]
    colors = ["tab:red" if r["hyp_found"] == 0 else "tab:blue" for r in named]
    a.barh([r["id"].split("::")[1][:38] for r in named], [r["ratio"] for r in named], color=colors)
    a.set_title("red: Hypothesis found no violation in any seed", fontsize=8)
    a.axvline(1.0, color="grey", lw=0.8)
    a.set_xscale("log")
    a.set_xlabel("capproof / Hypothesis CPU time (log)")
    a.tick_params(axis="y", labelsize=6)
    for name, pts in curves.items():
        if pts:
            b.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=name)
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_xlabel("batch entries / experts")
    b.set_ylabel("CPU seconds")
    b.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "compare.png"), dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds of 200 examples; sizes up to 1024")
    ap.add_argument("--budget", type=float, default=60.0, help="stop a curve after a point over this many seconds")
    args = ap.parse_args()
    seeds, examples = (3, 200) if args.quick else (20, 1000)
    sizes = [8, 32, 128, 512, 1024] if args.quick else [8, 32, 128, 512, 1024, 4096]
    rows = corpus_table(seeds, examples)
    curves = scaling(sizes, args.budget)
    write(rows, curves)


if __name__ == "__main__":
    main()
