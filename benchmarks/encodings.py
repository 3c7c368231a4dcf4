"""Robust encodings: CPU seconds and verdicts of the same facts written different ways
(benchmarks/encodings/*.py), one ``capproof prove`` process each, at growing sizes.

    python benchmarks/encodings.py [--sizes 4,16,64,256] [--batches 64,256,1024] [--rlimit N]

Prints a Markdown table (CPU = user + sys of the child process, from ``resource``)."""

import argparse
import json
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(path: str, keyword: str, env: dict, rlimit: int | None) -> tuple[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "capproof", "prove", path, "-k", keyword, "--density", "off", "-j", "1", "--json", "-"]
    if rlimit:
        cmd += ["--rlimit", str(rlimit)]
    out = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        verdict = json.loads(out.stdout)["obligations"][0]["verdict"]
    except (ValueError, KeyError, IndexError):
        verdict = "error: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return verdict, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4,16,64,256")
    ap.add_argument("--rlimit", type=int, default=None)
    ap.add_argument("--batches", default="64,256,1024", help="sorted_batch.py sizes (REPRO_N)")
    args = ap.parse_args()
    print("| obligation | tokens (ids) | verdict | CPU s |\n|---|---|---|---|")
    for t in [int(s) for s in args.sizes.split(",")]:
        for kw in ("pairwise", "count"):
            v, cpu = run(os.path.join(HERE, "encodings", "distinct_experts.py"), kw, {"REPRO_T": str(t)}, args.rlimit)
            print(f"| distinct experts, {kw} | {t} ({4 * t}) | {v} | {cpu:.2f} |", flush=True)
    for name in (
        "rows_fit_min_eq_max",
        "rows_fit_min_eq_max_proved",
        "rows_fit_min_eq_max_full",
        "rows_fit_min_eq_max_full_proved",
        "rows_fit_min_eq_max_choice",
        "rows_fit_min_eq_max_choice_proved",
    ):
        others = " and ".join(
            f"not {o}" for o in ("proved", "full", "choice") if o not in name.removeprefix("rows_fit_min_eq_max")
        )
        kw = f"{name} and {others}" if others else name
        v, cpu = run(os.path.join(HERE, "encodings", "uniform_batch.py"), kw, {}, args.rlimit)
        size = "256" if "full" in name else "Choice 1..256" if "choice" in name else "Range 1..256"
        print(f"| uniform batch `{name}` | {size} | {v} | {cpu:.2f} |", flush=True)
    for n in [int(s) for s in args.batches.split(",")]:
        for name in ("order_dependent", "long_requests_fit_cex", "long_requests_fit"):
            kw = name if name != "long_requests_fit" else "long_requests_fit and not cex"
            v, cpu = run(os.path.join(HERE, "encodings", "sorted_batch.py"), kw, {"REPRO_N": str(n)}, args.rlimit)
            print(f"| sorted batch `{name}` | {n} | {v} | {cpu:.2f} |", flush=True)


if __name__ == "__main__":
    main()
