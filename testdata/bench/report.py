"""BENCHMARKS.md and its chart from one scripts/compare run.

Reads outboxbench's JSON summaries (<workload>-<relay>.json), the commands
(<workload>-<relay>.cmd), load.txt and machine.json from --out.
"""
import argparse
import json
import os
import statistics

RELAYS = ["outboxrelay", "debezium"]
COLORS = {"pg_recvlogical": "#777777", "outboxrelay": "#1f77b4", "debezium": "#d62728"}
TARGETS = [
    # key, label, goal text, workloads, compare(value) -> met
    ("throughput", "drain throughput, outboxrelay ÷ Debezium", "≥ 5×", ["backlog-1", "backlog-100"], lambda v: v >= 5),
    ("p99", "p99 latency, outboxrelay ÷ Debezium", "≤ 0.1", ["steady-1000", "steady-5000"], lambda v: v <= 0.1),
    ("rss", "peak RSS, outboxrelay ÷ Debezium", "≤ 0.1", None, lambda v: v <= 0.1),
    ("first", "process start to first event, outboxrelay ÷ Debezium", "≤ 0.05", None, lambda v: v <= 0.05),
    ("recv", "drain throughput, outboxrelay ÷ pg_recvlogical", "≥ 0.7", ["backlog-1", "backlog-100"], lambda v: v >= 0.7),
]


def load(out, w, r):
    try:
        with open(os.path.join(out, f"{w}-{r}.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, f="{:,.0f}"):
    return "–" if v is None else f.format(v)


def ratio(a, b):
    return a / b if a and b else None


def ratios(w, o, d):
    """outboxrelay's figures over Debezium's (and pg_recvlogical's) for workload w."""
    r = {}
    if o and d:
        if w.startswith("backlog"):
            r["throughput"] = ratio(o.get("throughput_eps"), d.get("throughput_eps"))
        r["p99"] = ratio((o.get("latency_ms") or {}).get("p99"), (d.get("latency_ms") or {}).get("p99"))
        r["rss"] = ratio(o.get("peak_rss_mib"), d.get("peak_rss_mib"))
        r["first"] = ratio(o.get("first_event_seconds"), d.get("first_event_seconds"))
    if o and o.get("relay_vs_recvlogical"):
        r["recv"] = o["relay_vs_recvlogical"]
    return r


def table_rows(workloads, res):
    rows = []
    for w in workloads:
        for r in RELAYS:
            s = res[w].get(r)
            rec = (s or {}).get("recvlogical") if r == "outboxrelay" else None
            if rec:
                beside = w.startswith("steady")
                rows.append(f"| {w} | pg_recvlogical{' (beside outboxrelay)' if beside else ''} | "
                            f"{'–' if beside else fmt(rec.get('throughput_eps'))} | – | "
                            f"{'–' if beside else fmt(rec.get('seconds'), '{:.1f}')} "
                            f"| – | – | {fmt(rec.get('cpu_seconds_per_million'), '{:.1f}')} | – | – | – |")
            if s is None:
                rows.append(f"| {w} | {r} | failed or not run | | | | | | | | |")
                continue
            lat = s.get("latency_ms") or {}
            conf = "timeout" if s.get("confirm_timeout") else fmt(s.get("confirm_seconds"), "{:.1f}")
            steady = w.startswith("steady")
            rows.append("| {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} | {} | {} / {} / {} |".format(
                w, r,
                f"{fmt(s.get('achieved_rate'))} inserted of {fmt(s.get('rate'))} offered" if steady else fmt(s.get("throughput_eps")),
                "–" if steady else fmt(s.get("throughput_after_first_event_eps")),
                "–" if steady else fmt(s.get("drain_seconds"), "{:.1f}"),
                fmt(lat.get("p50"), "{:.1f}"), fmt(lat.get("p99"), "{:.1f}"), fmt(lat.get("max"), "{:.0f}"),
                fmt(s.get("peak_rss_mib"), "{:.0f}"), fmt(s.get("cpu_seconds_per_million"), "{:.1f}"),
                fmt(s.get("first_event_seconds"), "{:.2f}"), conf,
                fmt(s.get("received")), fmt(s.get("missing")), fmt(s.get("duplicates"))))
    return rows


def target_rows(workloads, res):
    rows = []
    for key, label, goal, only, met in TARGETS:
        ws = [w for w in workloads if only is None or w in only]
        vals = {w: ratios(w, res[w].get("outboxrelay"), res[w].get("debezium")).get(key) for w in ws}
        cells = []
        for w in workloads:
            if w not in ws:
                cells.append("")
                continue
            v = vals[w]
            if v is None:
                cells.append("–")
            elif key in ("throughput",):
                cells.append(f"{v:.1f}× {'✅' if met(v) else '❌'}")
            else:
                cells.append(f"{v:.3g} {'✅' if met(v) else '❌'}")
        have = [v for v in vals.values() if v is not None]
        if not have:
            verdict = "not measured"
        elif len(have) < len(ws):
            verdict = "incomplete"
        elif all(met(v) for v in have):
            verdict = "**met**"
        else:
            verdict = f"**not met** ({sum(not met(v) for v in have)} of {len(have)} workloads miss it)"
        rows.append(f"| {label} | {goal} | " + " | ".join(cells) + f" | {verdict} |")
    return rows


def cpu(res, w, r):
    return (res.get(w, {}).get(r) or {}).get("cpu_seconds_per_million")


def recv_cpu(res, w):
    return ((res.get(w, {}).get("outboxrelay") or {}).get("recvlogical") or {}).get("cpu_seconds_per_million")


def worst_second(s):
    pts = [p for p in (s or {}).get("timeline") or [] if p.get("samples")]
    if not pts:
        return None, None
    return max(p["p99_ms"] for p in pts), max(p["max_ms"] for p in pts)


def cell(v, goal_met, f="{:.2f}×"):
    return "–" if v is None else f.format(v) + (" ✅" if goal_met(v) else " ❌")


def efficiency_rows(workloads, res):
    """The targets of issue 14, from this run: one row per target."""
    o = lambda w: res.get(w, {}).get("outboxrelay")
    rows = []
    v = ratio(cpu(res, "steady-1000", "outboxrelay"), cpu(res, "backlog-1", "outboxrelay"))
    rows.append(("CPU per event at a steady 1,000/s ÷ outboxrelay's own draining 1 row/tx", "≤ 3×", cell(v, lambda x: x <= 3), v is not None and v <= 3, v))
    v = ratio(cpu(res, "steady-1000", "outboxrelay"), cpu(res, "steady-1000", "debezium"))
    rows.append(("CPU per event at a steady 1,000/s, outboxrelay ÷ Debezium", "≤ 0.25×", cell(v, lambda x: x <= 0.25), v is not None and v <= 0.25, v))
    v = ratio(cpu(res, "backlog-1", "outboxrelay"), recv_cpu(res, "backlog-1"))
    rows.append(("CPU per event draining 1 row/tx, outboxrelay ÷ pg_recvlogical", "≤ 2×", cell(v, lambda x: x <= 2), v is not None and v <= 2, v))
    v = ratio(cpu(res, "backlog-100", "outboxrelay"), recv_cpu(res, "backlog-100"))
    rows.append(("CPU per event draining 100 rows/tx, outboxrelay ÷ pg_recvlogical", "≤ 1.5×", cell(v, lambda x: x <= 1.5), v is not None and v <= 1.5, v))
    s = o("steady-1000")
    p99 = ((s or {}).get("latency_ms") or {}).get("p99")
    rows.append(("p99 at 1,000/s", "≤ 10 ms", cell(p99, lambda x: x <= 10, "{:.1f} ms"), p99 is not None and p99 <= 10, p99))
    wp99, wmax = worst_second(s)
    rows.append(("worst one-second p99 at 1,000/s (its slowest event in brackets)", "≤ 50 ms",
                 "–" if wp99 is None else f"{wp99:.1f} ms ({wmax:.0f} ms) " + ("✅" if wp99 <= 50 else "❌"),
                 wp99 is not None and wp99 <= 50, wp99))
    s = o("steady-4000")
    got = (s or {}).get("achieved_rate")
    rows.append(("insert rate reached at 4,000/s offered while outboxrelay ran", "≥ 99 % of 4,000",
                 cell(got, lambda x: x >= 3960, "{:,.0f}/s"), got is not None and got >= 3960, got))
    p99 = ((s or {}).get("latency_ms") or {}).get("p99")
    rows.append(("p99 at 4,000/s", "< 50 ms", cell(p99, lambda x: x < 50, "{:.1f} ms"), p99 is not None and p99 < 50, p99))
    rss = {w: (o(w) or {}).get("peak_rss_mib") for w in workloads}
    have = [x for x in rss.values() if x]
    worst = max(have) if have else None
    rows.append(("peak RSS, every workload (the largest)", "< 40 MiB",
                 "–" if worst is None else f"{worst:.0f} MiB ({max(rss, key=lambda w: rss[w] or 0)}) " + ("✅" if worst < 40 else "❌"),
                 worst is not None and worst < 40 and len(have) == len(workloads), worst))
    return ["| {} | {} | {} | {} |".format(label, goal, c, "**met**" if ok else ("not measured" if v is None else "**not met**"))
            for label, goal, c, ok, v in rows]


def observations(workloads, res):
    """What a reader should know to judge the ratios, computed from this run."""
    notes = []
    for w in workloads:
        o, d = res[w].get("outboxrelay"), res[w].get("debezium")
        rec = (o or {}).get("recvlogical")
        if w.startswith("backlog") and rec and d and d.get("throughput_eps"):
            limit = rec["throughput_eps"] / d["throughput_eps"]
            if limit < 5:
                notes.append(f"**{w}**: pg_recvlogical, which only decodes and discards, drained this backlog "
                             f"{limit:.1f}× as fast as Debezium, so no relay that reads the same `pgoutput` stream "
                             f"can reach 5× Debezium here; outboxrelay reached "
                             f"{o['throughput_eps'] / d['throughput_eps']:.1f}× ({o.get('relay_vs_recvlogical', 0):.2f} "
                             "of pg_recvlogical).")
        if not w.startswith("steady"):
            continue
        rate = float(w.split("-")[1])
        for r in RELAYS:
            s = res[w].get(r)
            if not s:
                continue
            if s.get("achieved_rate") and s["achieved_rate"] < 0.95 * rate:
                notes.append(f"**{w}, {r}**: the inserter reached only {s['achieved_rate']:,.0f} events/s "
                             f"(worst commit {s.get('insert_lag_max_ms', 0) / 1000:.1f} s behind schedule): the "
                             "machine was saturated during this run.")
            per_sec = [p["p99_ms"] for p in s.get("timeline") or [] if p.get("samples")]
            if len(per_sec) >= 10:
                typical = statistics.median(per_sec)
                spikes = [p for p in s["timeline"] if p.get("samples") and p["p99_ms"] > max(10 * typical, 100)]
                if spikes and len(spikes) <= len(per_sec) // 10:
                    notes.append(f"**{w}, {r}**: the per-second p99 was typically {typical:,.0f} ms; "
                                 f"{len(spikes)} second(s) stood out (worst {max(p['max_ms'] for p in spikes):,.0f} ms at "
                                 f"second {max(spikes, key=lambda p: p['max_ms'])['s']}), and they set the run's p99: "
                                 "stalls of this kind come and go between runs on the shared machine (see the chart).")
            tl = [p["events"] for p in s.get("timeline") or []]
            mid = tl[10:-10] if len(tl) > 30 else []
            if mid and s.get("achieved_rate"):
                med = statistics.median(mid)
                if med < 0.8 * s["achieved_rate"]:
                    p99 = (s.get("latency_ms") or {}).get("p99")
                    notes.append(f"**{w}, {r}** fell behind the insert: it delivered a median {med:,.0f} events/s "
                                 f"(seconds 10 to {len(tl) - 10} of the timeline) while {s['achieved_rate']:,.0f}/s "
                                 f"were inserted, and caught up only after the insert stopped, so its latency grew "
                                 f"through the run (p99 {p99:,.0f} ms).")
    return notes


def load_summary(out):
    try:
        with open(os.path.join(out, "load.txt")) as f:
            one = [float(line.split()[1]) for line in f if len(line.split()) >= 2]
    except OSError:
        return "not sampled"
    if not one:
        return "not sampled"
    return (f"1-minute load average sampled every 5 s: start {one[0]:.2f}, mean {statistics.mean(one):.2f}, "
            f"max {max(one):.2f}, end {one[-1]:.2f} (the relay under test, PostgreSQL, Kafka and the inserter share these 2 cores; anything else running adds to it)")


def chart(path, workloads, res):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backlogs = [w for w in workloads if w.startswith("backlog")]
    steadies = [w for w in workloads if w.startswith("steady")]
    cols = max(len(backlogs) + 2, len(steadies), 1)
    fig, axes = plt.subplots(2, cols, figsize=(5 * cols, 6.4), squeeze=False)
    if steadies:
        rate_curves(axes[0][len(backlogs)], axes[0][len(backlogs) + 1], steadies, res)
    for i, w in enumerate(backlogs):
        ax = axes[0][i]
        for r in RELAYS:
            s = res[w].get(r)
            if not s or not s.get("timeline"):
                continue
            f0 = s.get("first_event_seconds") or 0
            ax.plot([f0 + p["s"] + 0.5 for p in s["timeline"]], [p["events"] for p in s["timeline"]],
                    color=COLORS[r], lw=1.4, marker=".", ms=4, label=f"{r}: {s.get('throughput_eps', 0):,.0f}/s overall")
            rec = s.get("recvlogical")
            if rec:
                ax.axhline(rec["throughput_eps"], color=COLORS["pg_recvlogical"], ls="--", lw=1,
                           label=f"pg_recvlogical: {rec['throughput_eps']:,.0f}/s")
        rows = w.split("-")[1]
        ax.set_title(f"drain of the backlog, {rows} row{'s' if rows != '1' else ''}/tx", fontsize=10)
        ax.set_xlabel("seconds since the relay process started")
        ax.set_ylabel("events delivered per second")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    for i, w in enumerate(steadies):
        ax = axes[1][i]
        for r in RELAYS:
            s = res[w].get(r)
            if not s or not s.get("timeline"):
                continue
            pts = [p for p in s["timeline"] if p.get("samples")]
            p99 = (s.get("latency_ms") or {}).get("p99")
            ax.plot([p["s"] for p in pts], [max(p["p99_ms"], 0.1) for p in pts], color=COLORS[r], lw=1.2, marker=".", ms=3,
                    label=f"{r}: p99 {p99:,.0f} ms overall" if p99 else r)
        ax.set_yscale("log")
        ax.set_title(f"latency at {int(w.split('-')[1]):,} events/s (p99 per second)", fontsize=10)
        ax.set_xlabel("seconds since the first event")
        ax.set_ylabel("INSERT to consumer, ms (log)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="best")
    for row in axes:
        for ax in row:
            if not ax.has_data():
                ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def rate_curves(lat_ax, cpu_ax, steadies, res):
    """p50 and p99 latency, and CPU per event, over the offered rate."""
    rates = {w: int(w.split("-")[1]) for w in steadies}
    for r in RELAYS:
        pts = [(rates[w], res[w][r]) for w in steadies if res[w].get(r)]
        lat = [(x, s["latency_ms"]) for x, s in pts if s.get("latency_ms")]
        if lat:
            lat_ax.plot([x for x, _ in lat], [max(l["p99"], 0.1) for _, l in lat], color=COLORS[r], marker="o", ms=4, lw=1.4, label=f"{r} p99")
            lat_ax.plot([x for x, _ in lat], [max(l["p50"], 0.1) for _, l in lat], color=COLORS[r], marker=".", ms=4, lw=1, ls="--", label=f"{r} p50")
        c = [(x, s["cpu_seconds_per_million"]) for x, s in pts if s.get("cpu_seconds_per_million")]
        if c:
            cpu_ax.plot([x for x, _ in c], [v for _, v in c], color=COLORS[r], marker="o", ms=4, lw=1.4, label=r)
    rec = [(rates[w], ((res[w].get("outboxrelay") or {}).get("recvlogical") or {}).get("cpu_seconds_per_million")) for w in steadies]
    rec = [(x, v) for x, v in rec if v]
    if rec:
        cpu_ax.plot([x for x, _ in rec], [v for _, v in rec], color=COLORS["pg_recvlogical"], marker="o", ms=4, lw=1.2, ls="--", label="pg_recvlogical (beside outboxrelay)")
    lat_ax.set_yscale("log")
    lat_ax.set_title("latency over the offered rate", fontsize=10)
    lat_ax.set_xlabel("events/s offered")
    lat_ax.set_ylabel("INSERT to consumer, ms (log)")
    lat_ax.grid(alpha=0.3, which="both")
    lat_ax.legend(fontsize=8, loc="best")
    cpu_ax.set_yscale("log")
    cpu_ax.set_title("CPU per event over the offered rate", fontsize=10)
    cpu_ax.set_xlabel("events/s offered")
    cpu_ax.set_ylabel("CPU s per M events (log)")
    cpu_ax.grid(alpha=0.3, which="both")
    cpu_ax.legend(fontsize=8, loc="best")


def extras(directory):
    """Sections other issues add: every *.md of the directory, in name order."""
    if not directory or not os.path.isdir(directory):
        return ""
    parts = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".md"):
            with open(os.path.join(directory, name)) as f:
                parts.append(f.read().strip())
    return "".join("\n" + p + "\n" for p in parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--chart", required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--steady", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--extra", help="a directory whose *.md files are appended, in name order")
    a = ap.parse_args()
    workloads = a.workloads.split()
    res = {w: {r: load(a.out, w, r) for r in RELAYS} for w in workloads}
    with open(os.path.join(a.out, "machine.json")) as f:
        m = json.load(f)
    chart(a.chart, workloads, res)
    chart_rel = os.path.relpath(a.chart, os.path.dirname(os.path.abspath(a.markdown)))
    cmds = []
    for w in workloads:
        for r in RELAYS:
            p = os.path.join(a.out, f"{w}-{r}.cmd")
            if os.path.exists(p):
                with open(p) as f:
                    cmds.append(f"# {w}, {r}\n" + f.read().strip())
    confirm = [f"{w} {r}" for w in workloads for r in RELAYS if (res[w].get(r) or {}).get("confirm_timeout")]
    smoke = "" if a.events >= 1_000_000 else (
        f"\n> **Reduced run**: {a.events:,}-event backlogs, not the 1,000,000 the full comparison uses.\n")
    doc = f"""# Benchmarks: outboxrelay, Debezium and pg_recvlogical

Produced by `scripts/compare` in one run of {m['seconds'] / 60:.1f} minutes on one machine and one bed:
{a.events:,}-event backlogs at 1 and 100 rows per transaction, and steady runs of {a.steady} at
{', '.join(f"{int(w.split('-')[1]):,}" for w in workloads if w.startswith('steady'))} events/s offered. Each
relay ran alone, on its own fresh replication slot and topic namespace, reading the same connector JSON;
pg_recvlogical ran on a slot of its own, before outboxrelay on a backlog and beside it on a steady run.
{smoke}
![drain throughput per second of the backlogs, latency and CPU per event over the offered rate, and p99 latency per second of each steady run]({chart_rel})

## Results

| workload | tool | events/s, from process start (steady: the insert rate reached) | events/s, after the first event | drain s | latency p50 / p99 / max ms | peak RSS MiB | CPU s per M events | start to first event s | slot confirmed last commit, s | received / missing / duplicates |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
""" + "\n".join(table_rows(workloads, res)) + """

## Against the targets of issue 6

Ratios from this run, outboxrelay's figure divided by Debezium's (or by pg_recvlogical's in the last row).
Throughput and pg_recvlogical are compared on the backlogs (drain), p99 latency on the steady runs (a
backlog's latency is mostly its wait for the relay to start), RSS and start-up on every workload.

| target | goal | """ + " | ".join(workloads) + """ | verdict |
| --- | --- | """ + " | ".join("---" for _ in workloads) + """ | --- |
""" + "\n".join(target_rows(workloads, res)) + """

## Against the targets of issue 14 (CPU per event, the latency curve)

Ratios from this run. CPU per event is the relay process's user + system CPU over its whole life per
event; pg_recvlogical's is its own process's, on the backlog while it drains it, on a steady run while it
streams beside outboxrelay. The latency targets are for a quiet machine; this one is shared (see the load
under Machine).

| target | goal | this run | verdict |
| --- | --- | --- | --- |
""" + "\n".join(efficiency_rows(workloads, res)) + """

### Observations from this run

""" + ("\n".join("- " + n for n in observations(workloads, res)) or "- none") + f"""

## How the figures are measured

`cmd/outboxbench` inserts the rows with SQL (4 connections), reads the topics with the Kafka protocol and
checks every event (run id, sequence number, per-aggregate order; 100 aggregate ids as keys).

- **events/s from process start**: events ÷ (last event read from Kafka − relay process start); the backlog
  is fully inserted before the relay starts. **After the first event**: the rate once events flow (leaves the
  start-up out). **pg_recvlogical**: the same backlog decoded from its own slot to /dev/null
  (`--endpos` = the last commit), timed from its start to its exit: the raw decoding limit, no Kafka.
- **Latency**: consumer receipt − `clock_timestamp()` at INSERT (payload `ts`; same host, same clock);
  steady runs leave the first 2 s (warm-up) out.
- **Peak RSS**: the largest sum of VmHWM over the relay's process group, sampled every 100 ms from /proc
  (Debezium: the Connect JVM, started by `scripts/debezium run-connector`, which execs `java`).
- **CPU s per M events**: user + system CPU of the relay process over its whole life (start-up, work,
  idle time until it is stopped) per million events of the run. **pg_recvlogical's**: the same for its
  process (`-f /dev/null`), draining the backlog from its own slot before outboxrelay starts, or streaming
  from its own slot beside outboxrelay for the whole steady run (its walsender decodes the WAL a second
  time then, on the same 2 cores, which makes outboxrelay's steady runs harder, not easier, than
  Debezium's, which ran alone). The floor for anything that reads the same stream, read as the relays read
  it: pg_recvlogical connects with `sslmode=prefer` (outboxbench `--recvlogical-sslmode`), the default of
  the connector's `database.sslmode` both relays use, so all three read over TLS on this bed (its
  PostgreSQL has `ssl=on`). Runs before 2026-12-02 gave pg_recvlogical the bed's plain-text DSN: over TLS
  its CPU per event draining 100 rows/tx is about 1.8 times that.
- **Insert rate reached** (steady runs): events ÷ the time the paced inserter took; below the offered rate
  when the machine could not keep up while that relay ran.
- **Start to first event**: relay process start to the first event read from Kafka.
- **Slot confirmed last commit**: process start until the slot's `confirmed_flush_lsn` passed the WAL
  position just before the run's last COMMIT; outboxbench waits at most `--confirm-timeout` after the last
  event and reports "timeout" otherwise. Nothing else waits for it.{' Timed out here: ' + ', '.join(confirm) + '.' if confirm else ''}
  Debezium confirms only when Connect commits offsets (`offset.flush.interval.ms`, 60 s by default, kept
  here), so a timeout is expected for it; outboxrelay confirms each acknowledged transaction within 100 ms.

## Settings

Both relays read `testdata/connector.json` with only `name`, `database.hostname`/`database.port`,
`slot.name`, `publication.name`, `table.include.list` and a topic namespace prefix in
`transforms.outbox.route.topic.replacement` changed. Debezium's connector defaults apply to everything else:
`max.batch.size` 2048, `max.queue.size` 8192, `poll.interval.ms` 500, `heartbeat.interval.ms` 0 (off),
`snapshot.mode` `no_data` (from the JSON). outboxrelay runs with its defaults (`linger.ms` 5, `acks=all`,
at most 10,000 records and `buffer.memory` (32 MiB) in flight, confirmation every 100 ms).

Kafka Connect 4.1.1 standalone (`scripts/debezium run-connector`), Connect's defaults except:

| setting | value here | Connect's default | why |
| --- | --- | --- | --- |
| `key.converter` / `value.converter` | `StringConverter` / `JsonConverter`, `schemas.enable=false` | `JsonConverter` with schemas | outboxrelay's defaults (issue 6): same bytes on the topic |
| `header.converter` | `SimpleHeaderConverter` | `SimpleHeaderConverter` | (the default, written out) |
| `offset.flush.interval.ms` | 60000 | 60000 | (the default, written out) |
| `offset.storage.file.filename` | a file per run | required in standalone mode | fresh offsets for the fresh slot |
| `plugin.discovery` | `service_load` | `hybrid_warn` | skips the reflective plugin scan: shortens Debezium's start-up (in its favour) |
| JVM heap and GC | `-Xms128m -Xmx512m -XX:+UseSerialGC` | `connect-standalone.sh`: `-Xms256M -Xmx2G`, G1 | a small heap and Serial GC lower Debezium's RSS (in its favour); 512 MiB is ample for these runs |
| logging | WARN, `io.debezium` INFO | INFO | less console output |

The producer is Connect's: `acks=all`, `max.in.flight.requests.per.connection=1` (Connect's worker
defaults), `linger.ms` 5 and `batch.size` 16384 (the Kafka 4.1 producer's defaults). Connect's JVM exits
with 143 on SIGTERM; that is its normal shutdown.

## Machine

- {m['nproc']} cores ({m['cpu']}), {m['mem_gib']} GiB RAM, {m['kernel']}
- PostgreSQL {m['postgres']}; {m['kafka']}; {m['debezium']}; {m['java']}
- outboxrelay {m['outboxrelay']}, built with {m['go']}
- Load: {load_summary(a.out)}

Numbers from a shared, noisy 2-core machine move between runs by tens of percent: compare the ratios of
one run, not absolute figures across runs or machines.

## Exact commands

The whole comparison:

    scripts/compare

which ran, one after the other (`--relay-cmd` starts, measures and stops the relay):

""" + "\n\n".join("\n".join("    " + line for line in c.splitlines()) for c in cmds) + "\n" + extras(a.extra)
    with open(a.markdown, "w") as f:
        f.write(doc)


if __name__ == "__main__":
    main()
