#!/usr/bin/python3
"""Per tb-bench run of run.sh: how many sizes have native's prepared form above 1.05x its blocking
one, and the largest ratio (the ratios of ratios.py, unrounded). Usage: counts.py RUN.json ..."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../analysis"))
import auto_goals  # noqa: E402


def main(paths):
    print("run / agreement: sizes above 1.05x, largest ratio")
    for path in sorted(paths):
        _, times, _, _ = auto_goals.load_passes(path)
        ratios = [r["persistent"]["native"] for r in auto_goals.point_ratios(times)]
        name = os.path.basename(path).split(".json")[0]
        print(f"{name:28} {sum(r > 1.05 for r in ratios)} of {len(ratios)}  {max(ratios):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
