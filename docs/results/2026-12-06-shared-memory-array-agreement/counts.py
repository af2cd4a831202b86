#!/usr/bin/python3
"""Per run in a ratios.txt of run.sh: how many of its points have native's prepared form above
1.05x its blocking one, and the largest ratio. Usage: counts.py RATIOS.txt"""
import sys


def main(path):
    print("run / agreement: points above 1.05x (of the sizes), largest ratio")
    for block in open(path).read().strip().split("\n\n"):
        lines = block.strip().splitlines()
        ratios = [float(line.split("|")[2]) for line in lines[3:]]
        name = lines[0].split(".json")[0]
        print(f"{name:28} {sum(r > 1.05 for r in ratios)} of {len(ratios)}  {max(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
