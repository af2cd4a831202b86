"""Reading an experiment store (the JSON-lines file experiments/run.py appends to), the one way
every analysis script reads it. Like run.py, it never stops on a damaged store: a line that is
not a JSON object (one cut short by a killed runner) is reported on stderr as FILE:LINE and
skipped, and so are the rows of a point the store holds only partly (rows carrying
"rows_in_point" and "point_run", fewer of that point_run than rows_in_point; rows of older
stores, without rows_in_point, are all kept). Standard library only.

It also holds the one reader of the other JSON files the analysis scripts take (tb-bench and
tb-redistribute output, calibrations, selection files), so that their errors read alike."""
import json
import sys


def unreadable(name, e):
    """The ValueError, naming the file (`name`), of the OSError `e` from reading it."""
    return ValueError(f"{name}: " + ("is a directory" if isinstance(e, IsADirectoryError)
                                     else f"cannot be read: {e.strerror}"))


def read_json(path, name=None):
    """The JSON document in `path`; ValueError naming the file (as `name` where given, e.g.
    "--merge FILE") if it is a directory, cannot be read or is not JSON (or not UTF-8 text)."""
    name = name or path
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise unreadable(name, e) from None
    except ValueError as e:  # JSONDecodeError, or bytes that are not UTF-8
        raise ValueError(f"{name}: not JSON ({e})") from None


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
