#!/usr/bin/python3
"""The report of an experiment store (results/store.jsonl, written by experiments/run.py): PNG plots
and a markdown report with the tables behind them.

    /usr/bin/python3 analysis/report.py results/store.jsonl --out results/report

Plots (one file per group that has data):
  time_<mode>_<layout>.png       time per call vs bytes per peer, one line per algorithm (tb-bench)
  bandwidth_<mode>_<layout>.png  per-rank send bandwidth vs bytes per peer
  speedup_<mode>_<layout>.png    native's time / each algorithm's time, at each size
  intra_vs_inter_<layout>.png    time in each network mode / time intra, per algorithm
  floor_<experiment>.png         redistribution time / memcpy floor per method (tb-redistribute)
  scaling_<experiment>.png       FFT time vs ranks per method (tb-fft)
  breakdown_<experiment>.png     FFT time split into serial FFTs and redistributions per method
Every number in a plot is in a table of report.md.
"""
import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpich_algorithms  # noqa: E402
from store import read_rows as store_rows  # noqa: E402


# {tool: (the fields the report reads of its rows, those of them that must be > 0)}; "*": every
# row's (a row of experiments/run.py). main checks them (mpich_algorithms.check_rows) before the report.
ROW_FIELDS = {"*": (("experiment", "tool"), ()),
              "tb-bench": (("mode", "mpi", "ranks", "layout", "algorithm", "bytes_per_peer"), ("time_s",)),
              "tb-redistribute": (("mode", "mpi", "ranks", "global_shape", "grid", "method"),
                                  ("fastest_s", "median_s", "fastest_over_floor")),
              "tb-fft": (("mode", "mpi", "ranks", "global_shape", "grid", "method", "serial", "fft_s",
                          "redistribute_s"), ("fastest_s",))}


def load(store, checked=False):
    """The store's complete rows as a frame (analysis/store.py: damaged lines and partly stored
    points are reported and skipped). ValueError when nothing is left; with `checked` (the report
    to be made of them), also where a row lacks a field the report reads or has a time that is
    not > 0, naming the row."""
    rows = store_rows(store)
    if not rows:
        raise ValueError(f"{store} holds no results")
    if checked:
        mpich_algorithms.check_rows(store, list(enumerate(rows, 1)), ROW_FIELDS)
    return with_platform_modes(pd.DataFrame(rows))


def with_platform_modes(df):
    """Simulated rows (mode smpi, experiments/run.py --mode smpi) get the mode "smpi:<platform
    file's name>", so that every table, plot and de-duplication, which all group by mode, keeps
    them apart from measured rows and from other platforms' simulations."""
    if "platform" not in df or "mode" not in df:
        return df
    smpi = (df["mode"] == "smpi") & df["platform"].notna()
    names = df.loc[smpi, "platform"].map(lambda p: os.path.splitext(os.path.basename(str(p)))[0])
    df.loc[smpi, "mode"] = "smpi:" + names
    return df


def redistribution_frame(df):
    """tb-redistribute rows, the latest of each (mode, MPI build, ranks, shape, decomposition,
    grid, variant). "decomposition" is "slab" (a 1-D process grid) or "pencil"; "variant" is the
    method without its path detail, and with the MPICH selection the point forced, if any
    (MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM or a selection JSON): points that differ only in those
    measure different things and must not replace each other."""
    r = df[df["tool"] == "tb-redistribute"].copy()
    r["grid"] = r["grid"].astype(str)
    r["decomposition"] = r["grid"].map(decomposition)
    r["variant"] = [method.split(" (")[0] + selection_suffix(point)
                    for method, point in zip(r["method"], r.get("point", pd.Series([{}] * len(r), index=r.index)))]
    keys = ["mode", "mpi", "ranks", "global_shape", "decomposition", "grid", "variant"]
    return r.drop_duplicates(subset=keys, keep="last").sort_values(keys)


def decomposition(grid):
    """"slab" for a process grid that divides one axis ("4", "1x4", "4x1"), "pencil" for more."""
    return "pencil" if sum(1 for p in str(grid).split("x") if p.strip() not in ("1", "")) > 1 else "slab"


def selection_suffix(point):
    """" [mpich: node_leader]" for a point that forced an in-MPICH algorithm, " [mpich: json FILE]"
    for one that gave a selection file (its name, and the hash of its contents where the point
    carries one: two files are two variants), "" otherwise."""
    forced = mpich_algorithms.forced_selection(point)
    if forced == "json":
        name = os.path.basename(str(point["env:MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"]))
        digest = point.get("env:TB_SELECTION_FILE_SHA256")
        forced += f" {name}" + (f" {digest[:8]}" if digest else "")
    return f" [mpich: {forced}]" if forced else ""


def rank_series(k, g):
    """The series names of a plot over rank counts: the variant, with the MPI build and the mode
    where the experiment has several, the global shape where the plot has several, and the process
    grid where one rank count still has several (two grids at one count are two lines, never a zigzag)."""
    series = (k["mpi"] + " " if g["mpi"].nunique() > 1 else "") + k["variant"]
    if g["mode"].nunique() > 1:
        series = series + " " + k["mode"].astype(str)
    if k["global_shape"].nunique() > 1:
        series = series + " " + k["global_shape"].astype(str)
    if pd.DataFrame({"s": series, "r": k["ranks"]}).duplicated().any():
        series = series + " grid " + k["grid"]
    return series


def floor_bars(g, title, path):
    """Horizontal bars of fastest / memcpy floor, one per row of one rank count."""
    labels = g["mpi"] + " " + g["variant"] + " " + g["decomposition"] + " " + g["grid"] + " " + g["mode"]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.28 * len(g)))
    ax.barh(labels, g["fastest_over_floor"])
    ax.set_xlabel("fastest / memcpy floor")
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sizes_frame(df):
    """tb-bench rows: one per (mode, layout, algorithm, bytes per peer), the latest measurement."""
    if "tool" not in df or not (df["tool"] == "tb-bench").any():
        return pd.DataFrame()
    s = df[df["tool"] == "tb-bench"].copy()
    s["bytes_per_peer"] = s["bytes_per_peer"].astype(int)
    s = s.drop_duplicates(subset=["mode", "mpi", "ranks", "layout", "algorithm", "bytes_per_peer"], keep="last")
    s["time_us"] = s["time_s"] * 1e6
    s["bandwidth_GBps"] = s["bytes_per_second"] / 1e9
    return s


def speedups(s):
    """time(native) / time(algorithm) per (mode, mpi, ranks, layout, bytes)."""
    keys = ["mode", "mpi", "ranks", "layout", "bytes_per_peer"]
    native = s[s["algorithm"] == "native"][keys + ["time_s"]].rename(columns={"time_s": "native_s"})
    m = s.merge(native, on=keys, how="inner")
    m["speedup_vs_native"] = m["native_s"] / m["time_s"]
    return m


def mode_ratios(s):
    """time(mode) / time(intra) for the same mpi, ranks, layout, algorithm, bytes."""
    keys = ["mpi", "ranks", "layout", "algorithm", "bytes_per_peer"]
    intra = s[s["mode"] == "intra"][keys + ["time_s"]].rename(columns={"time_s": "intra_s"})
    m = s[s["mode"] != "intra"].merge(intra, on=keys, how="inner")
    m["ratio_to_intra"] = m["time_s"] / m["intra_s"]
    return m


def line_plot(frame, x, y, series, title, ylabel, path, logy=True):
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    if frame[series].nunique() > 10:  # the default cycle repeats its 10 colours
        ax.set_prop_cycle(color=plt.cm.tab20.colors)
    for name, g in frame.sort_values(x).groupby(series):
        ax.plot(g[x], g[y], marker="o", markersize=3, label=str(name))
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)  # beside the lines, never over them
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(frame, columns, floatfmt=".3g"):
    return frame[columns].to_markdown(index=False, floatfmt=floatfmt)


def by_size(wide, floatfmt):
    """A table whose first column is bytes per peer (printed as an integer)."""
    wide = wide.copy()
    wide["bytes_per_peer"] = wide["bytes_per_peer"].astype(int).astype(str)
    return wide.to_markdown(index=False, floatfmt=floatfmt)


def records(frame):
    """The rows of a frame as dicts, without the columns a row does not have (NaN)."""
    return [{k: v for k, v in r.items() if not (isinstance(v, float) and math.isnan(v))}
            for r in frame.to_dict("records")]


def patch_series_plots(rows, out, md, images):
    """One time-per-call plot per rank count, mode and layout of the MPICH campaign, a line per series."""
    groups = mpich_algorithms.by_rank_count(rows)
    for ranks, group in groups.items():
        tag, label = (f"_{ranks}ranks", f", {ranks} ranks") if len(groups) > 1 else ("", "")
        for (mode, layout), by_size in sorted(mpich_algorithms.size_times(group).items()):
            frame = pd.DataFrame([{"bytes_per_peer": size, "series": name, "time_us": t * 1e6}
                                  for size, times in by_size.items() for name, t in times.items()])
            name = f"mpich_{mode}_{layout}{tag}.png"
            line_plot(frame, "bytes_per_peer", "time_us", "series", f"MPICH patch series: {layout}, {mode}{label}",
                      "time per call (us)", os.path.join(out, name))
            images.append(os.path.join(out, name))
            md += [f"![{layout}, {mode}{label}]({name})", ""]
    return md, images


def sizes_section(s, out):
    """Markdown and plots of the per-size benchmarks: time, bandwidth and speedup against native per
    mode, MPI, rank count and layout."""
    md = ["## Alltoallw per message size (tb-bench)", "",
          "Time per call is the MAX over ranks; bandwidth is bytes sent per rank per second.", ""]
    images = []
    sp = speedups(s)
    for (mode, mpi, ranks, layout), g in s.groupby(["mode", "mpi", "ranks", "layout"]):
        tag = f"{mode}_{mpi}_{ranks}r_{layout}"
        title = f"{layout}, {mode}, {mpi}, {ranks} ranks"
        p = os.path.join(out, f"time_{tag}.png")
        line_plot(g, "bytes_per_peer", "time_us", "algorithm", title, "time per call (us)", p)
        images.append(p)
        p = os.path.join(out, f"bandwidth_{tag}.png")
        line_plot(g, "bytes_per_peer", "bandwidth_GBps", "algorithm", title, "GB/s per rank", p)
        images.append(p)
        gs = sp[(sp["mode"] == mode) & (sp["mpi"] == mpi) & (sp["ranks"] == ranks) & (sp["layout"] == layout)]
        if not gs.empty:
            p = os.path.join(out, f"speedup_{tag}.png")
            line_plot(gs, "bytes_per_peer", "speedup_vs_native", "algorithm", title, "native time / time", p,
                      logy=False)
            images.append(p)
        md += [f"### {title}", "", f"![time](time_{tag}.png) ![bandwidth](bandwidth_{tag}.png)"
               + (f" ![speedup](speedup_{tag}.png)" if not gs.empty else ""), ""]
        wide = g.pivot_table(index="bytes_per_peer", columns="algorithm", values="time_us").reset_index()
        md += ["Time per call (us):", "", by_size(wide, ".3g"), ""]
        if not gs.empty:
            wide = gs.pivot_table(index="bytes_per_peer", columns="algorithm", values="speedup_vs_native").reset_index()
            md += ["Speedup vs native (native time / time):", "", by_size(wide, ".2f"), ""]
    return md, images


def mode_ratio_section(s, out):
    """Markdown and plots of each network mode's times against intra-node's (nothing where the
    store has one mode only)."""
    mr = mode_ratios(s)
    if mr.empty:
        return [], []
    md = ["## Intra- vs inter-node", "",
          "Time in each network mode divided by the time of the same case intra-node.", ""]
    images = []
    for (mpi, ranks, layout), g in mr.groupby(["mpi", "ranks", "layout"]):
        tag = f"{mpi}_{ranks}r_{layout}"
        g = g.assign(series=g["algorithm"] + " (" + g["mode"] + ")")
        p = os.path.join(out, f"intra_vs_inter_{tag}.png")
        line_plot(g, "bytes_per_peer", "ratio_to_intra", "series", f"{layout}, {mpi}, {ranks} ranks",
                  "time / time intra", p)
        images.append(p)
        wide = g.pivot_table(index="bytes_per_peer", columns="series", values="ratio_to_intra").reset_index()
        md += [f"### {layout}, {mpi}, {ranks} ranks", "", f"![intra vs inter](intra_vs_inter_{tag}.png)", "",
               by_size(wide, ".2f"), ""]
    return md, images


def redistribution_section(df, out):
    """Markdown and plots of the redistributions against their memcpy floor, per experiment: over
    the rank counts where it has several, else as bars."""
    md = ["## Redistributions against the memcpy floor (tb-redistribute)", ""]
    images = []
    for exp, g in redistribution_frame(df).groupby("experiment"):
        md += [f"### {exp}", ""]
        if g["ranks"].nunique() > 1:  # one line per variant over the rank counts, a plot per decomposition
            for kind, k in g[g["method"] != "memcpy_floor"].groupby("decomposition"):
                name = f"floor_{exp}_{kind}.png"
                line_plot(k.assign(series=rank_series(k, g)), "ranks", "fastest_over_floor", "series", f"{exp}: {kind}",
                          "fastest / memcpy floor", os.path.join(out, name), logy=False)
                images.append(os.path.join(out, name))
                md += [f"![{kind}]({name})", ""]
        else:
            name = f"floor_{exp}.png"
            floor_bars(g, exp, os.path.join(out, name))
            images.append(os.path.join(out, name))
            md += [f"![floor]({name})", ""]
        md += [table(g, ["mode", "mpi", "ranks", "global_shape", "decomposition", "grid", "variant", "fastest_s",
                         "median_s", "fastest_over_floor"]), ""]
    return md, images


def fft_breakdown_plot(g, exp, path):
    """Bars of the serial FFTs' and the redistributions' time per method at the largest rank count."""
    top = g[g["ranks"] == g["ranks"].max()].sort_values("time_ms")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.barh(top["method"], top["fft_ms"], label="serial FFTs (mean per pair)")
    ax.barh(top["method"], top["redistribute_ms"], left=top["fft_ms"], label="redistributions (mean per pair)")
    ax.set_xlabel("ms")
    ax.set_title(f"{exp}: breakdown at {int(g['ranks'].max())} ranks")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fft_section(df, out):
    """Markdown and plots of the parallel FFT: scaling over the rank counts and the time's breakdown."""
    md = ["## Parallel FFT (tb-fft)", "",
          "Forward+backward pair, fastest of the outer loops / inner (MAX over ranks).", ""]
    images = []
    for exp, g in df[df["tool"] == "tb-fft"].groupby("experiment"):
        g = g.drop_duplicates(subset=["mode", "mpi", "ranks", "global_shape", "method", "serial"], keep="last")
        g = g.assign(time_ms=g["fastest_s"] * 1e3, fft_ms=g["fft_s"] * 1e3, redistribute_ms=g["redistribute_s"] * 1e3)
        p = os.path.join(out, f"scaling_{exp}.png")
        line_plot(g, "ranks", "time_ms", "method", exp, "forward+backward (ms)", p)
        p2 = os.path.join(out, f"breakdown_{exp}.png")
        fft_breakdown_plot(g, exp, p2)
        images += [p, p2]
        md += [f"### {exp}", "", f"![scaling](scaling_{exp}.png) ![breakdown](breakdown_{exp}.png)", "",
               table(g.sort_values(["ranks", "time_ms"]),
                     ["mode", "ranks", "global_shape", "grid", "method", "time_ms", "fft_ms", "redistribute_ms"]), ""]
    return md, images


def where_it_ran(df):
    """Markdown naming the MPI library, commit and host of the store's first row with metadata."""
    meta = df["metadata"].dropna().iloc[0] if "metadata" in df and df["metadata"].notna().any() else {}
    if not isinstance(meta, dict) or not meta:
        return []
    return ["## Where it ran", "", f"- MPI: {meta.get('mpi_library', '?')}",
            f"- git commit: {meta.get('git_commit', '?')}", f"- host: {meta.get('host', '?')}", ""]


def report(df, out):
    """Writes OUT/report.md and its plots from the store's rows `df`; returns (path, plot paths)."""
    os.makedirs(out, exist_ok=True)
    md = ["# Testbed report", "",
          f"{len(df)} result rows from {df['experiment'].nunique()} experiment(s): "
          f"{', '.join(sorted(df['experiment'].unique()))}.", ""]
    images = []
    everything = df
    # The MPICH campaign measures one algorithm name ("native") under several libraries and CVARs:
    # its own section names each variant; the generic sections would merge them.
    patch_series = df["experiment"].isin(mpich_algorithms.EXPERIMENTS)
    if patch_series.any():
        rows = records(df[patch_series])
        md += mpich_algorithms.report(rows)
        md, images = patch_series_plots(rows, out, md, images)
        df = df[~patch_series]

    sections = []
    s = sizes_frame(df)
    if not s.empty:
        sections += [sizes_section(s, out), mode_ratio_section(s, out)]
    if "tool" in df and (df["tool"] == "tb-redistribute").any():
        sections.append(redistribution_section(df, out))
    if "tool" in df and (df["tool"] == "tb-fft").any():
        sections.append(fft_section(df, out))
    for section_md, section_images in sections:
        md += section_md
        images += section_images
    md += where_it_ran(everything)
    path = os.path.join(out, "report.md")
    with open(path, "w") as fh:
        fh.write("\n".join(md) + "\n")
    return path, images


def main(argv=None):
    parser = argparse.ArgumentParser(description="Plots and a markdown report from an experiment store.")
    parser.add_argument("store")
    parser.add_argument("--out", default="results/report")
    args = parser.parse_args(argv)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out}: is a file, not a folder")
    try:
        path, images = report(load(args.store, checked=True), args.out)
    except (OSError, ValueError) as e:
        print(f"report.py: error: {e}", file=sys.stderr)
        return 2
    print(f"report.py: {path} and {len(images)} plot(s) in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
