# usage: imported by bench/small-http (not run on its own)
"""bench/small-http's figures: one row per target (derive), the console
table, and the published files (JSON, markdown summary, two PNGs drawn
with gnuplot, as bench/compare's and bench/http-compare's are)."""
import json
import os
import shutil

from cmplib import human
from report import fmt_us, gnuplot
from shsummary import lines


def derive(res):
    """res["rows"]: the per-target figures the table, summary and plots
    use; res["ratios"]: each goblin target against static."""
    rows = []
    for tag, s in res["targets"].items():
        pop, ld, se, m = s["populate"], s["loaded"], s["serial"], s["memory"]
        r = {"target": tag, "head": s.get("head"),
             "populate_objects_per_s": pop["objects_per_s"],
             "populate_mb_per_s": pop["mb_per_s"],
             "populate_cpu_us_per_put": pop["server_cpu_us_per_put"],
             "flushed_objects_per_s": pop.get("objects_per_s_flushed"),
             "qps": ld["qps"], "cpu_us_per_get": ld["server_cpu_us_per_request"],
             "cpu_us_per_get_by_process": ld["cpu_us_per_request"],
             "cpu_load": ld["server_cpu_load"],
             "loaded_ttfb_p50_us": ld["ttfb_p50_us"],
             "loaded_ttfb_p99_us": ld["ttfb_p99_us"],
             "loaded_complete_p99_us": ld["complete_p99_us"],
             "ttfb_p50_us": se["ttfb_p50_us"], "ttfb_p99_us": se["ttfb_p99_us"],
             "complete_p50_us": se["complete_p50_us"],
             "complete_p99_us": se["complete_p99_us"],
             "serial_qps": se["qps"],
             "expected_bytes": m["expected_bytes"],
             "expected_total_bytes": s["cgroup_started"]["usage_bytes"]
             + m["expected_bytes"],
             "measured_bytes": m.get("rss_growth_bytes", m.get("measured_bytes")),
             "cgroup_bytes": s["cgroup"]["usage_bytes"],
             "cgroup_peak_bytes": s["cgroup"]["max_usage_bytes"],
             "verified_objects": s["verified_objects"],
             "verify_errors": s["verify_errors"]}
        if tag != "static":
            st = s["stats"]
            r.update({"ram_only_objects": st["curr_items"] - st["ssd_objects"],
                      "ssd_objects": st["ssd_objects"],
                      "index_bytes_per_object": m["index_bytes_per_object"],
                      "ssd_read_mb_loaded": ld["devices"]["ssd"]["read_bytes"] / 1e6})
        rows.append(r)
    res["rows"] = rows
    base = rows[0]
    res["ratios"] = {r["target"]: {
        "qps": r["qps"] / base["qps"],
        "cpu_per_get": r["cpu_us_per_get"] / base["cpu_us_per_get"],
        "cgroup_bytes": r["cgroup_bytes"] / base["cgroup_bytes"],
        "ttfb_p99": r["ttfb_p99_us"] / base["ttfb_p99_us"],
        "complete_p99": r["complete_p99_us"] / base["complete_p99_us"],
        "populate": r["populate_objects_per_s"] / base["populate_objects_per_s"]}
        for r in rows[1:]}
    return res


def text_table(res):
    hdr = "%-12s %9s %9s %8s %8s %9s %9s %9s %9s %10s %10s" % (
        "target", "fill/s", "req/s", "cpu/GET", "cpu/PUT", "TTFB p50",
        "TTFB p99", "cmpl p50", "cmpl p99", "expected", "cgroup")
    lines = ["", "%d %s objects, %s; serial latency (1 connection), loaded "
             "throughput (%d connections)" % (
                 res["corpus"]["keys"], res["corpus"]["dist"],
                 human(res["corpus"]["bytes"]), res["params"]["conns"]), hdr]
    for r in res["rows"]:
        lines.append("%-12s %9.0f %9.0f %8s %8s %9s %9s %9s %9s %10s %10s" % (
            r["target"], r["populate_objects_per_s"], r["qps"],
            fmt_us(r["cpu_us_per_get"]), fmt_us(r["populate_cpu_us_per_put"]),
            fmt_us(r["ttfb_p50_us"]), fmt_us(r["ttfb_p99_us"]),
            fmt_us(r["complete_p50_us"]), fmt_us(r["complete_p99_us"]),
            human(r["expected_bytes"]), human(r["cgroup_bytes"])))
    return "\n".join(lines)


COLORS = ["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
          "#e377c2"]


def bars(work, name, rows, values):
    """A data file of one bar per row: index, label, value(s), colour."""
    path = os.path.join(work, name)
    with open(path, "w") as f:
        for i, r in enumerate(rows):
            f.write("%d \"%s\" %s %d\n" % (i, r["target"], " ".join(
                "%g" % v for v in values(r)), int(COLORS[i % len(COLORS)][1:], 16)))
    return path


def bar_plot(title, ylabel, dat, n, extra=""):
    return ["set title '%s'" % title, "set ylabel '%s'" % ylabel,
            "set yrange [0:*]", "set xrange [-0.6:%g]" % (n - 0.4),
            "set style fill solid 0.8 border -1", "set grid ytics",
            "set offsets 0, 0, graph 0.12, 0", "unset key",
            "plot '%s' using 1:3:(0.6):4:xtic(2) with boxes lc rgb variable, "
            "'' using 1:3:(sprintf('%%.%s', $3)) with labels offset 0,1%s"
            % (dat, "0f", extra)]


def plot_main(res, png, work):
    rows, n = res["rows"], len(res["rows"])
    mem = os.path.join(work, "mem.dat")
    with open(mem, "w") as f:
        for i, r in enumerate(rows):
            f.write("%d \"%s\" %g %g\n" % (i, r["target"],
                                           r["expected_total_bytes"] / 2**20,
                                           r["cgroup_bytes"] / 2**20))
    script = ["set terminal pngcairo size 1280,860 font ',10'",
              "set output '%s'" % png,
              "set multiplot layout 2,2 title 'Small objects over HTTP: %d "
              "fb\\_value objects (%s), module vs nginx static files (%s)'"
              % (res["corpus"]["keys"], human(res["corpus"]["bytes"]),
                 res["meta"]["date"])]
    script += bar_plot("Throughput, %d connections" % res["params"]["conns"],
                       "req/s", bars(work, "qps.dat", rows, lambda r: [r["qps"]]), n)
    script += bar_plot("Server cpu per GET (nginx + goblin-store)", "us",
                       bars(work, "cpu.dat", rows,
                            lambda r: [r["cpu_us_per_get"]]), n)
    script += bar_plot("Population rate (PUT, %d connections)"
                       % res["params"]["conns"], "objects/s",
                       bars(work, "pop.dat", rows,
                            lambda r: [r["populate_objects_per_s"]]), n)
    script += ["set title 'Resident memory: expected from counts vs the cgroup'",
               "set ylabel 'MiB'", "set yrange [0:*]", "set key top left",
               "set style data histograms", "set style histogram clustered gap 1",
               "set xrange [-0.6:%g]" % (n - 0.4), "set offsets 0, 0, graph 0.1, 0",
               "plot '%s' using 3:xtic(2) title 'started + expected from counts' lc rgb "
               "'#7f7f7f', '' using 4 title 'cgroup after the runs' lc rgb "
               "'#d62728'" % mem, "unset multiplot"]
    gnuplot("\n".join(script) + "\n", work)


def plot_cdf(res, png, work):
    script = ["set terminal pngcairo size 1280,480 font ',10'",
              "set output '%s'" % png, "set multiplot layout 1,2 title "
              "'Warm-cache latency, one connection (serial run)'",
              "set logscale x", "set grid xtics ytics", "set key bottom right",
              "set yrange [0:100]", "set ylabel 'percentile'"]
    for kind, title in (("ttfb_cdf", "time to first byte"),
                        ("complete_cdf", "complete")):
        lines = []
        for i, (tag, s) in enumerate(res["targets"].items()):
            dat = os.path.join(work, "cdf-%s-%s.dat" % (kind, tag))
            with open(dat, "w") as f:
                for pct, us in s["serial"][kind]:
                    f.write("%g %g\n" % (max(us, 1), pct))
            lines.append("'%s' using 1:2 with lines lw 2 lc rgb '%s' title '%s'"
                         % (dat, COLORS[i % len(COLORS)], tag))
        script += ["set title '%s'" % title, "set xlabel 'us (log scale)'",
                   "plot " + ", ".join(lines)]
    script.append("unset multiplot")
    gnuplot("\n".join(script) + "\n", work)


def publish(res, out_dir, work):
    """Renders every file in <work>, then moves them into <out_dir>: all
    of them or none."""
    stem = "%s-small-http" % res["meta"]["date"]
    stage = os.path.join(work, "publish")
    os.makedirs(stage)
    names = [stem + ".json", stem + ".png", stem + "-cdf.png", stem + ".md"]
    with open(os.path.join(stage, names[0]), "w") as f:
        json.dump(res, f, indent=1)
    plot_main(res, os.path.join(stage, names[1]), work)
    plot_cdf(res, os.path.join(stage, names[2]), work)
    with open(os.path.join(stage, names[3]), "w") as f:
        f.write("\n".join(lines(res, names[1], names[2])) + "\n")
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        shutil.move(os.path.join(stage, name), os.path.join(out_dir, name))
    return [os.path.join(out_dir, name) for name in names]
