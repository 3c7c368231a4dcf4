"""CLI start-up (target: <= 0.3 s): median wall and CPU seconds of ``capproof --help``,
``capproof --version`` and a one-obligation ``prove``, each a fresh process, and the modules
``import capproof.cli`` loads.

    python benchmarks/startup.py [--runs 10]

CPU = user + sys of the child (``resource.RUSAGE_CHILDREN``); wall depends on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMANDS = {
    "capproof --help": ["--help"],
    "capproof --version": ["--version"],
    "capproof prove -k gdn_state_column_in_row (spec/per_batch_buffers.py)": [
        "prove",
        "spec/per_batch_buffers.py",
        "-k",
        "gdn_state_column_in_row and not after",
        "--density",
        "off",
        "-j",
        "1",
        "--no-contracts",
    ],
}


def measure(args: list[str], runs: int) -> tuple[float, float, int]:
    walls, cpus, code = [], [], 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "capproof", *args], cwd=ROOT, capture_output=True).returncode
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(walls), statistics.median(cpus), code


def heavy_modules() -> list[str]:
    """Which of the heavy modules ``import capproof.cli`` loads (none, with lazy imports)."""
    code = (
        "import sys, capproof.cli; print(' '.join(m for m in ('z3', 'capproof.prover', 'capproof.ci_formats', "
        "'capproof.arith', 'capproof.runner', 'rich', 'hypothesis', 'crosshair') if m in sys.modules))"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True).stdout.split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    print(f"| command | median wall s | median CPU s | exit |  ({args.runs} runs each)\n|---|---|---|---|")
    for name, cmd in COMMANDS.items():
        wall, cpu, code = measure(cmd, args.runs)
        print(f"| `{name}` | {wall:.3f} | {cpu:.3f} | {code} |", flush=True)
    print(
        f"\n`import capproof.cli` loads: {', '.join(heavy_modules()) or 'none of z3, prover, ci_formats, arith, runner'}"
    )


if __name__ == "__main__":
    main()
