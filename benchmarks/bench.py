"""Benchmark: wall time of every obligation and contract, the full run, and pinned runs.

Run with ``make bench``. Prints a table; numbers go in docs/performance.md by hand.
"""

from __future__ import annotations

import statistics
import time

from rich.console import Console
from rich.table import Table

from capproof import Options, run

REPEAT = 3


def main() -> None:
    console = Console()
    per_item: dict[str, list[float]] = {}
    totals = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        result = run(["spec"], Options())
        totals.append(time.perf_counter() - started)
        for r in result.all_results():
            per_item.setdefault(r.id, []).append(r.seconds)
    table = Table(title=f"capproof prove, median of {REPEAT} runs")
    table.add_column("obligation / contract")
    table.add_column("verdict")
    table.add_column("seconds", justify="right")
    for r in result.all_results():
        table.add_row(r.id, r.verdict.value, f"{statistics.median(per_item[r.id]):.3f}")
    console.print(table)
    console.print(f"full run (spec/, contracts included): median {statistics.median(totals):.2f} s")
    started = time.perf_counter()
    run(["spec"], Options(pins={"max_model_len": 350000, "block_size": 64, "dcp": 1}, contracts=False))
    console.print(f"pinned run (350000/64/1, no contracts): {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
