"""Reading an experiment store (the JSON-lines file experiments/run.py appends to), the one way
every analysis script reads it. Like run.py, it never stops on a damaged store: a line that is
not a JSON object (one cut short by a killed runner) is reported on stderr as FILE:LINE and
skipped, and so are the rows of a point the store holds only partly (rows carrying
"rows_in_point" and "point_run", fewer of that point_run than rows_in_point; rows of older
stores, without rows_in_point, are all kept). Standard library only."""
import json
import sys


def read_objects(store, quiet=False):
    """Every line of `store` that is a JSON object, in order; any other line (one cut short by a
    kill, or a bad hand edit) is reported as FILE:LINE on stderr (unless quiet) and skipped.
    OSError if the file cannot be read. experiments/run.py reads its store with this too."""
    rows = []
    with open(store, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text:
                continue
            try:
                row = json.loads(text)
                why = "not a JSON object"
            except ValueError as e:
                row, why = None, f"not JSON ({e.msg}; cut short?)"
            if not isinstance(row, dict):
                if not quiet:
                    print(f"{store}:{number}: skipped, {why}: {text[:80]}", file=sys.stderr)
                continue
            rows.append(row)
    return rows


def read_rows(store):
    """The complete rows of `store`, in the file's order (OSError if it cannot be read)."""
    return without_partial_points(store, read_objects(store))


def without_partial_points(store, rows):
    counts, expected = {}, {}
    for r in rows:
        if isinstance(r.get("rows_in_point"), int):
            run = (str(r.get("key")), str(r.get("point_run")))
            counts[run] = counts.get(run, 0) + 1
            expected[run] = r["rows_in_point"]
    partial = {run for run, n in counts.items() if n < expected[run]}
    if not partial:
        return rows
    print(f"{store}: skipped the rows of {len(partial)} point(s) stored only partly (keys "
          f"{', '.join(sorted(str(k) for k, _ in partial))}); experiments/run.py runs them again", file=sys.stderr)
    return [r for r in rows if not isinstance(r.get("rows_in_point"), int)
            or (str(r.get("key")), str(r.get("point_run"))) not in partial]
