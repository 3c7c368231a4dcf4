"""Benchmark: engine overhead vs solver time on the heaviest obligations.

The issue's target: "engine overhead (building terms, minimising, density) <= 30 % of solver time
on the heaviest obligations". Each obligation below is decided in-process by
``capproof.prover.prove_obligation`` with the default ``Options`` (as ``capproof prove`` does),
from a fresh Z3 context (as ``capproof.runner._decide`` does), ``--repeat`` times. Its time is
split into

- **solver**: time spent inside Z3's solving calls, i.e. ``Z3_solver_check_assumptions``
  (``Solver.check``), ``Z3_solver_get_unsat_core`` (``Solver.unsat_core``; core minimisation
  happens there with ``core.minimize``), ``Z3_optimize_check`` and ``Z3_optimize_get_unsat_core``,
  measured by wrapping those C-API entry points of ``z3.z3`` for the run;
- **engine**: everything else (building terms and lemmas, ``z3.simplify``, normalisation, the
  semantics probe's replay, model evaluation, density, witnesses, Python overhead).

The other calls into Z3's solver objects (asserting, push/pop, reading a model, freeing a
solver: :data:`SOLVER_API_CALLS`) count as engine time in the issue's ratio and are shown apart
(``api``, and ``ratio2`` = the rest of the engine over solver + api).

CPU seconds (``time.process_time``) are the figure to compare under load; wall seconds are shown
too. Prints one row per obligation (median of the repeats) and the ratio engine / solver, the
issue's metric. Run with ``make bench`` or::

    python benchmarks/engine_overhead.py [--repeat 3] [--json out.json] [--profile ID] [IDS...]

``--profile ID`` prints the cProfile top functions (cumulative) of one obligation instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import z3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The MoE routings named by the issue, then the slowest other obligations of a ``prove --json``
#: run (``.capproof/last-run.json`` of 2026-12-02).
HEAVIEST = [
    "spec/moe_align.py::vllm_sorted_ids_fit_every_routing",
    "spec/moe_align.py::vllm_write_positions_within_sorted_ids",
    "spec/moe_align.py::wna16_reads_within_sorted_ids",
    "spec/moe_align.py::sglang_sorted_ids_fit_with_filtered_bucket",
    "spec/moe_align.py::local_sizing_with_global_counts",
    "spec/per_batch_buffers.py::slot_mapping_fits_before_14024",
    "spec/vllm_0_33_today.py::padded_decode_rows_fit_without_uniform_split",
    "spec/vllm_0_33_buffers.py::flashinfer_pages__FlashInferMetadataBuilder_paged_kv_indices",
]

#: The Z3 C-API calls that are solving (the issue's metric; everything else is the engine's).
SOLVER_CALLS = (
    "Z3_solver_check_assumptions",
    "Z3_solver_get_unsat_core",
    "Z3_optimize_check",
    "Z3_optimize_get_unsat_core",
)

#: The other calls into Z3's solver objects, shown apart ("solver API"): asserting (Z3 stores and
#: preprocesses each assertion there), push/pop, reading a model, freeing a solver.
SOLVER_API_CALLS = (
    "Z3_solver_assert",
    "Z3_solver_assert_and_track",
    "Z3_solver_push",
    "Z3_solver_pop",
    "Z3_solver_get_model",
    "Z3_solver_dec_ref",
    "Z3_optimize_assert",
    "Z3_optimize_push",
    "Z3_optimize_pop",
    "Z3_optimize_get_model",
    "Z3_optimize_dec_ref",
    "Z3_optimize_minimize",
    "Z3_optimize_maximize",
)


class SolverClock:
    """Accumulates wall and CPU seconds spent inside :data:`SOLVER_CALLS` (``wall``, ``cpu``) and
    :data:`SOLVER_API_CALLS` (``api_cpu``) while installed (wrapping them in ``z3.z3``, where
    z3py and capproof call them)."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.api_cpu = 0.0
        self.calls = 0
        self._saved: dict[str, object] = {}

    def _wrap(self, fn, solving: bool):
        def timed(*args):
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*args)
            finally:
                if solving:
                    self.cpu += time.process_time() - c
                    self.wall += time.perf_counter() - w
                    self.calls += 1
                else:
                    self.api_cpu += time.process_time() - c

        return timed

    def __enter__(self) -> "SolverClock":
        for name in SOLVER_CALLS + SOLVER_API_CALLS:
            for module in (z3.z3, z3.z3core):  # capproof calls some through z3.z3core
                if name in vars(module) and (module, name) not in self._saved:
                    self._saved[(module, name)] = getattr(module, name)
                    setattr(module, name, self._wrap(self._saved[(module, name)], name in SOLVER_CALLS))
        return self

    def __exit__(self, *exc) -> None:
        for (module, name), fn in self._saved.items():
            setattr(module, name, fn)


def load_obligations(ids: list[str]):
    """The obligations named ``file::name`` (loaded with capproof's loader from the project root)."""
    from capproof.loader import LoadError, ensure_project_on_path, load_file
    from capproof.obligation import Obligation

    ensure_project_on_path(ROOT)
    out = []
    files: dict[str, list] = {}
    for ident in ids:
        path = ident.split("::", 1)[0]
        if path not in files:
            items = load_file(os.path.join(ROOT, path))
            if isinstance(items, LoadError):
                raise SystemExit(f"cannot load {path}: {items.message}")
            files[path] = items
        found = [
            o
            for o in files[path]
            if isinstance(o, Obligation)
            and o.id.endswith(ident.split("::", 1)[1])
            and o.id.split("::")[-1] == ident.split("::", 1)[1]
        ]
        if not found:
            raise SystemExit(f"no obligation {ident}")
        out.append((ident, found[0]))
    return out


def decide(ob, options=None):
    """``prove_obligation(ob)`` from a fresh Z3 context: (result, wall, cpu, solver clock)."""
    from capproof.prover import prove_obligation
    from capproof.verdict import Options

    previous = z3.z3._main_ctx
    z3.z3._main_ctx = None
    try:
        with SolverClock() as clock:
            w, c = time.perf_counter(), time.process_time()
            result = prove_obligation(ob, options or Options())
            cpu, wall = time.process_time() - c, time.perf_counter() - w
    finally:
        z3.z3._main_ctx = previous
    return result, wall, cpu, clock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="obligations (file::name); default: the heaviest")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--profile", help="cProfile one obligation (file::name) instead")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    if args.profile:
        import cProfile
        import pstats

        [(ident, ob)] = load_obligations([args.profile])
        decide(ob)  # warm-up (imports, caches)
        prof = cProfile.Profile()
        prof.enable()
        result, wall, cpu, clock = decide(ob)
        prof.disable()
        print(f"{ident}: {result.verdict.value}, cpu {cpu:.2f} s, solver cpu {clock.cpu:.2f} s (unprofiled calls)")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return 0
    obligations = load_obligations(args.ids or HEAVIEST)
    for _, ob in obligations[:1]:
        decide(ob)  # warm-up: imports and module caches are not any obligation's cost
    rows = []
    print(
        f"{'obligation':62} {'verdict':>14} {'cpu':>7} {'solver':>7} {'engine':>7} {'ratio':>7} {'api':>6} "
        f"{'ratio2':>7} {'wall':>7}"
    )
    for ident, ob in obligations:
        runs = [decide(ob) for _ in range(args.repeat)]
        verdicts = {r[0].verdict.value for r in runs}
        cpu = statistics.median(r[2] for r in runs)
        solver = statistics.median(r[3].cpu for r in runs)
        wall = statistics.median(r[1] for r in runs)
        solver_wall = statistics.median(r[3].wall for r in runs)
        engine = statistics.median(r[2] - r[3].cpu for r in runs)
        api = statistics.median(r[3].api_cpu for r in runs)
        rest = engine - api
        row = {
            "id": ident,
            "verdict": "/".join(sorted(verdicts)),
            "cpu": cpu,
            "solver_cpu": solver,
            "engine_cpu": engine,
            "ratio": engine / solver if solver else float("inf"),
            "solver_api_cpu": api,
            "ratio_without_api": rest / (solver + api) if solver + api else float("inf"),
            "wall": wall,
            "solver_wall": solver_wall,
            "solver_calls": runs[0][3].calls,
        }
        rows.append(row)
        print(
            f"{ident.split('::')[-1][:62]:62} {row['verdict']:>14} {cpu:7.2f} {solver:7.2f} {engine:7.2f} "
            f"{row['ratio']:6.0%} {api:6.2f} {row['ratio_without_api']:6.0%} {wall:7.2f}",
            flush=True,
        )
    tc, ts = sum(r["cpu"] for r in rows), sum(r["solver_cpu"] for r in rows)
    ta = sum(r["solver_api_cpu"] for r in rows)
    print(
        f"{'total':62} {'':>14} {tc:7.2f} {ts:7.2f} {tc - ts:7.2f} {(tc - ts) / ts if ts else 0:6.0%} {ta:6.2f} "
        f"{(tc - ts - ta) / (ts + ta) if ts + ta else 0:6.0%}"
    )
    print(
        f"CPU seconds, median of {args.repeat} runs. solver: Z3 check/unsat_core/Optimize; engine: the rest; "
        "ratio = engine / solver (target: <= 30 %); api: the engine's time in Z3's other solver calls "
        "(assert, push/pop, model, free); ratio2 = (engine - api) / (solver + api)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "rows": rows,
                    "repeat": args.repeat,
                    "python": sys.version.split()[0],
                    "z3": z3.get_version_string(),
                    "load": os.getloadavg(),
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
