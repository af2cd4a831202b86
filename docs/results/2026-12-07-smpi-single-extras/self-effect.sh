#!/usr/bin/env bash
# The self extras' own effect: a run of run.sh simulated again on its loop calibration's extras
# platform without the tables of a message to itself (host.self_noncontiguous_*), into a copy of
# the run's store, so that the measured rows and the network are the same and only native's own
# block is charged differently. Needs scripts/build.sh smpi and a run of run.sh.
# Usage: self-effect.sh RUN_DIR (e.g. /tmp/single-extras/run2)
set -euo pipefail
cd "$(dirname "$0")/../../.."
d=$1
definition=experiments/definitions/smpi_this_host_check.json
/usr/bin/python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(f"{d}/host-loop.json"))
for side in ("send", "recv"):
    del c["host"][f"self_noncontiguous_{side}_extra_seconds"]
json.dump(c, open(f"{d}/host-loop-without-self.json", "w"), indent=1)
PY
experiments/host_platform.py "$d/host-loop-without-self.json" --noncontiguous-extras --out "$d/this-host-loop-without-self.xml"
S=$d/store-without-self.jsonl
/usr/bin/python3 -c "
import json, sys
with open(sys.argv[2], 'w') as out:
    for line in open(sys.argv[1]):
        if json.loads(line).get('mode') != 'smpi': out.write(line)
" "$d/store.jsonl" "$S"
experiments/run.py $definition --mode smpi --platform "$d/this-host-loop-without-self.xml" --compute on \
  --smpi-arrays private --store "$S" > "$d/smpi-this-host-loop-without-self.log" 2>&1
/usr/bin/python3 analysis/smpi_vs_measured.py "$S" --platform "$d/this-host-loop-without-self.xml" \
  --out "$d/this-host-loop-without-self" > "$d/this-host-loop-without-self.txt"
