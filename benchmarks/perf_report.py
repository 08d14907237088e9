"""The figures of a run as Markdown: one table per phase, engines and history sizes as columns."""

from __future__ import annotations

ENGINES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def table(runs: list[dict], phase: str) -> list[str]:
    """Operations as rows; each engine (and history size) a column of "p50 / p95 ms"."""
    rows: dict[str, dict] = {}
    columns: dict[tuple, str] = {}
    for run in runs:
        for r in run["results"]:
            if "p50" not in r or r["group"] == "backlog":
                continue
            column = (run["engine"], r.get("size"))
            columns[column] = ENGINES[run["engine"]] + (f" {r['size']:,}" if r.get("size") else "")
            cell = f"{ms(r['p50'])} / {ms(r['p95'])}"
            if phase == "http":
                cell += f", {r['per_second']:.0f}/s"
            rows.setdefault(r["op"], {})[column] = cell
    unit = "p50 / p95 ms, requests/s" if phase == "http" else "p50 / p95 ms"
    lines = [f"### {phase} ({unit})", "", "| operation | " + " | ".join(columns.values()) + " |",
             "|---|" + "---:|" * len(columns)]
    for op, cells in rows.items():
        lines.append(f"| {op} | " + " | ".join(cells.get(c, "–") for c in columns) + " |")
    return lines


def notes(runs: list[dict]) -> list[str]:
    """Ours over DRF's generic views, the client over raw urllib, the embedding throughput, the backlog."""
    out = []
    for run in runs:
        engine = ENGINES[run["engine"]]
        by_op = {r["op"]: r for r in run["results"]}
        for ours, drf in (("GET observations/ (ours)", "GET observations/ (DRF ListAPIView)"),
                          ("GET observations/<id>/ (ours)", "GET observations/<id>/ (DRF RetrieveAPIView)")):
            if ours in by_op and drf in by_op:
                a, b = by_op[ours]["per_second"], by_op[drf]["per_second"]
                endpoint = ours.replace(" (ours)", "")
                out.append(f"- {engine}: {endpoint} {a:.0f}/s against DRF's {b:.0f}/s: {a / b:.2f}×")
        client = {(r["call"], r["way"]): r for r in run["results"] if r["group"] == "client"}
        for call in dict.fromkeys(c for c, _ in client):
            if (call, "MemoryClient") in client and (call, "urllib") in client:
                a, b = client[call, "MemoryClient"], client[call, "urllib"]
                out.append(f"- {engine}: {call} through MemoryClient p50 {ms(a['p50'])} ms against "
                           f"{ms(b['p50'])} ms over raw urllib: {a['p50'] / b['p50']:.2f}× "
                           f"(p95 {ms(a['p95'])} against {ms(b['p95'])} ms)")
        scoped = {(r["size"], r["op"]): r for r in run["results"] if r["group"] == "scopes"}
        for (size, op), r in scoped.items():
            if op.endswith("(shared)") and (size, op.replace("(shared)", "(scope support)")) in scoped:
                other = scoped[size, op.replace("(shared)", "(scope support)")]
                out.append(f"- {engine}, {size:,} memories: {op.removesuffix(' (shared)')} in a scope "
                           f"p50 {ms(other['p50'])} ms against {ms(r['p50'])} ms unscoped: "
                           f"{other['p50'] / r['p50']:.2f}×")
        for r in run["results"]:
            if r["group"] == "throughput":
                out.append(f"- {engine}: embedding {r['memories']} memories: {r['per_second']:.1f} "
                           f"memories/s, {r['chars_per_second']:,.0f} characters/s")
            elif r["group"] == "backlog":
                out.append(f"- {engine}: {r['memories']} saves in a row (p50 {ms(r['save']['p50'])} ms), "
                           f"then {r['n']} searches while the queue drained in {r['drained_seconds']:.0f} s: "
                           f"p50 {ms(r['p50'])} / p95 {ms(r['p95'])} / p99 {ms(r['p99'])} ms "
                           f"({r['left']} left waiting)")
    return out


def render(runs: list[dict]) -> str:
    lines = []
    for run in runs:
        if run["phase"] == runs[0]["phase"]:
            versions = ", ".join(f"{key} {value}" for key, value in run["versions"].items())
            lines.append(f"{ENGINES[run['engine']]}: {versions}")
    for phase in dict.fromkeys(run["phase"] for run in runs):
        same = [run for run in runs if run["phase"] == phase]
        lines += ["", *table(same, phase)]
        extra = notes(same)
        if extra:
            lines += ["", *extra]
    return "\n".join(lines) + "\n"
