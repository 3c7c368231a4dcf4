"""Target "decided at 1024 experts in <= 10 s": spec/moe_align.py's routing obligations
re-declared with ``num_experts`` in {8, E} and an E-entry routing vector (the spec declares 64
or 1024), each decided in-process from a fresh Z3 context with the default options.

    python benchmarks/routings.py [--experts 64,256,1024] [--timeout 600]

Prints a Markdown table: verdict, encoding and CPU seconds per obligation and size (one child
process per obligation and size, so an obligation past ``--timeout`` seconds is reported as such)."""

import argparse
import dataclasses
import multiprocessing
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OBLIGATIONS = [
    "vllm_sorted_ids_fit_every_routing",
    "vllm_write_positions_within_sorted_ids",
    "wna16_reads_within_sorted_ids",
    "wna16_reads_within_sorted_ids_same_tile",
]


def _decide(name: str, experts: int, conn) -> None:
    os.chdir(ROOT)
    sys.path.insert(0, ROOT)
    from capproof.domain import Choice, Vector
    from capproof.loader import load
    from capproof.obligation import Obligation
    from capproof.prover import prove_obligation

    items, _ = load(["spec/moe_align.py"], None)
    ob = next(o for o in items if isinstance(o, Obligation) and o.name == name)
    domain = dict(ob.domain)
    for key, dom in domain.items():
        if isinstance(dom, Vector):
            domain[key] = dataclasses.replace(dom, size=max(dom.size, experts))
    if "num_experts" in domain and experts not in domain["num_experts"].values:
        domain["num_experts"] = Choice(8, experts)
    started = time.process_time()
    r = prove_obligation(dataclasses.replace(ob, domain=domain))
    conn.send((r.verdict.value, r.encoding, time.process_time() - started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experts", default="64,256,1024")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    sizes = [int(x) for x in args.experts.split(",")]
    print("| obligation | experts | verdict | encoding | CPU s |\n|---|---:|---|---|---:|")
    ctx = multiprocessing.get_context("fork")
    for name in OBLIGATIONS:
        for experts in sizes:
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_decide, args=(name, experts, send))
            proc.start()
            if recv.poll(args.timeout):
                verdict, encoding, cpu = recv.recv()
                row = f"{verdict} | {encoding} | {cpu:.2f}"
            else:
                proc.kill()
                row = f"not decided | — | > {args.timeout:g} (wall)"
            proc.join()
            print(f"| `{name}` | {experts} | {row} |", flush=True)


if __name__ == "__main__":
    main()
