#!/usr/bin/python3
"""Per tb-bench run of run.sh: each algorithm's prepared (persistent) form over its blocking form on
the slab, per size, the median over passes of the ratio within a pass (analysis/auto_goals.py's
pairing). Usage: ratios.py RUN.json ..."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../analysis"))
import auto_goals  # noqa: E402


def main(paths):
    for path in paths:
        _, times, _, _ = auto_goals.load_passes(path)
        rows = auto_goals.point_ratios(times)
        algorithms = sorted({a for r in rows for a in r["persistent"]})
        print(f"\n{os.path.basename(path)}: persistent / blocking")
        print("| bytes/peer | " + " | ".join(algorithms) + " |")
        print("|---|" + "---|" * len(algorithms))
        for r in rows:
            print(f"| {r['bytes']} | " + " | ".join(f"{r['persistent'].get(a, float('nan')):.2f}" for a in algorithms)
                  + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
