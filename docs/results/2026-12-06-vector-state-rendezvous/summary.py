#!/usr/bin/python3
"""Per size and setting, over run.sh's launches: how many samples found the vector path slow (the
vector message above 4x the contiguous one's time: the tools' kSlowVectorRatio on the probe's
columns), in how many launches, and the median contiguous time and the median and largest extra."""
import glob
import os
import statistics
import sys

here = sys.argv[1]
table = {}
for path in sorted(glob.glob(os.path.join(here, "*-*-*.txt"))):
    name = os.path.basename(path)[:-4]
    if name == "summary":
        continue
    _, size, setting = name.split("-")
    rows = [line.split() for line in open(path) if line.split() and line.split()[0][0].isdigit()]
    contiguous = [float(r[1]) for r in rows]
    vector = [float(r[2]) for r in rows]
    slow = sum(v > 4.0 * c for c, v in zip(contiguous, vector))
    entry = table.setdefault((int(size), setting), {"samples": 0, "slow": 0, "launches": 0, "slow_launches": 0,
                                                    "extras": [], "contiguous": []})
    entry["samples"] += len(rows)
    entry["slow"] += slow
    entry["launches"] += 1
    entry["slow_launches"] += slow > 0
    entry["extras"] += [v - c for c, v in zip(contiguous, vector)]
    entry["contiguous"] += contiguous
print(f"{'KiB':>5} {'setting':>10} {'slow samples':>14} {'launches with any':>18} {'contiguous us':>14} "
      f"{'extra us median':>16} {'extra us max':>13}")
for (size, setting), e in sorted(table.items(), key=lambda kv: (kv[0][0], ["default", "get_zcopy", "eager"].index(kv[0][1]))):
    print(f"{size // 1024:>5} {setting:>10} {e['slow']:>6} of {e['samples']:<5} {e['slow_launches']:>8} of {e['launches']:<7} "
          f"{statistics.median(e['contiguous']):>14.1f} {statistics.median(e['extras']):>16.1f} {max(e['extras']):>13.1f}")
