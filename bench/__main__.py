"""Run the benchmarks and print one JSON object per result line.

``python -m bench`` runs every ``bench/bench_*.py``; ``python -m bench merge fanout`` runs those
named. Each module exposes ``run(quick: bool) -> Iterable[dict]``; every result carries its own
baseline measured in the same run, so ratios stay meaningful on a shared, noisy machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys

import bench


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args(argv)
    available = sorted(
        m.name.removeprefix("bench_") for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    unknown = set(args.names) - set(available)
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; available: {available}")
    for name in args.names or available:
        module = importlib.import_module(f"bench.bench_{name}")
        for result in module.run(quick=args.quick):
            print(json.dumps({"bench": name, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
