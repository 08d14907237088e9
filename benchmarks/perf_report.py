"""The machine a run happened on, and the results as Markdown tables."""

from __future__ import annotations

import os
import platform
import statistics

TARGETS_MS = {10_000: 30.0, 100_000: 60.0}  # hybrid search p50 at these histories


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine(payloads: list[dict]) -> dict:
    versions: dict[str, str] = {}
    for payload in payloads:
        versions.update(payload.get("versions") or {})
    # The load average says how much else ran on the machine (runs are not isolated).
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    return {"cpus": os.cpu_count(), "cpu": cpu_model(), "system": platform.platform(), **versions, "load": load}


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _ratio(ours: dict, floor: dict | None) -> str:
    return f"{ours['p50'] / floor['p50']:.1f}×" if floor and floor["p50"] > 0 else "–"


def _stat(values: list[float]) -> str:
    return f"{_ms(statistics.median(values))} ({', '.join(_ms(v) for v in values)})"


def render_hybrid(payload: dict) -> list[str]:
    """Hybrid vs lexical-only per user and query kind; the parts; the cold search; throughput."""
    results = payload["results"]
    rows = next((r["rows"] for r in results if "rows" in r), 0)
    sizes = sorted({r["size"] for r in results if r["group"] == "hybrid"})
    lines = [
        f"### hybrid ({payload['vendor']}, {rows:,} rows, every memory with a vector)",
        "",
        "| query | user's memories | hybrid p50 | hybrid p95 | lexical-only p50 | lexical-only p95 "
        "| query embedding p50 | hybrid − lexical p50 | hybrid cpu p50 | results (hybrid / lexical) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if r["group"] != "hybrid":
            continue
        h, lx, e = r["hybrid"], r["lexical"], r["embed"]
        target = TARGETS_MS.get(r["size"])
        verdict = f"≤ {target:g}: {'met' if h['p50'] <= target else 'missed'}" if target else "–"
        lines.append(
            f"| {r['op']} | {r['size']:,} | {_ms(h['p50'])} | {_ms(h['p95'])} | {_ms(lx['p50'])} | {_ms(lx['p95'])} "
            f"| {_ms(e['p50'])} | {_ms(h['p50'] - lx['p50'])} | {_ms(h['cpu_p50'])} "
            f"| {r['hits']['hybrid']} / {r['hits']['lexical']} | {verdict} |"
        )
    parts = [r for r in results if r["group"] == "hybrid-part"]
    if parts:
        names = list(dict.fromkeys(r["op"] for r in parts))
        lines += ["", "| part of a warm hybrid search | " + " | ".join(f"{s:,} p50 / p95" for s in sizes)
                  + " | growth ×(p50) |", "|---|" + "---:|" * (len(sizes) + 1)]
        for name in names:
            by_size = {r["size"]: r["sample"] for r in parts if r["op"] == name}
            cells = [f"{_ms(by_size[s]['p50'])} / {_ms(by_size[s]['p95'])}" if s in by_size else "–" for s in sizes]
            growth = (f"{by_size[sizes[-1]]['p50'] / by_size[sizes[0]]['p50']:.1f}×"
                      if len(sizes) > 1 and by_size.get(sizes[0], {}).get("p50") else "–")
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {growth} |")
    cold = [r for r in results if r["group"] == "hybrid-cold"]
    if cold:
        lines += ["", "| cold first search (matrix cache empty) | median ms (runs) | the vector lookup alone, cold |",
                  "|---|---:|---:|"]
        for r in cold:
            lines.append(f"| {r['size']:,} memories | {_stat(r['search_ms'])} | {_stat(r['lookup_ms'])} |")
    growth = []
    for kind in dict.fromkeys(r["op"] for r in results if r["group"] == "hybrid"):
        by_size = {r["size"]: r for r in results if r["group"] == "hybrid" and r["op"] == kind}
        if len(sizes) > 1 and all(s in by_size for s in sizes):
            a, b = by_size[sizes[0]], by_size[sizes[-1]]
            growth.append(
                f"{kind}: hybrid ×{b['hybrid']['p50'] / a['hybrid']['p50']:.2f}, lexical "
                f"×{b['lexical']['p50'] / a['lexical']['p50']:.2f}, hybrid − lexical "
                f"{_ms(a['hybrid']['p50'] - a['lexical']['p50'])} → {_ms(b['hybrid']['p50'] - b['lexical']['p50'])} ms"
            )
    if growth:
        lines += ["", f"Growth {sizes[0]:,} → {sizes[-1]:,} memories (p50): " + "; ".join(growth) + "."]
    throughput = [r for r in results if r["group"] == "throughput"]
    if throughput:
        lines += ["", "| embedding throughput | memories | words each | seconds | memories/s (wall) | cpu s "
                  "| memories per cpu-second | the model alone, memories/s (wall) | load (1 min) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in throughput:
            lines.append(
                f"| `embed_waiting`, OMP_NUM_THREADS={r['threads']} | {r['memories']} | {r['words']:.0f} "
                f"| {r['seconds']:.2f} | {r['per_second']:.1f} | {r['cpu_seconds']:.2f} "
                f"| {r['memories'] / r['cpu_seconds']:.1f} | {r['model_per_second']:.1f} | {r['load']:.1f} |"
            )
    return lines


def render(report: dict) -> str:
    lines = ["machine: " + ", ".join(f"{k} {v}" for k, v in report["machine"].items()), ""]
    for payload in report["phases"]:
        vendor = payload["vendor"]
        notes = [f"_{note}_" for note in payload.get("notes") or []]
        if payload.get("load"):
            notes.append(f"_load average during the phase (1/5/15 min, at its end): {payload['load']}_")
        if payload["phase"] == "hybrid":
            lines += render_hybrid(payload) + ([""] + notes if notes else [])
        elif payload["phase"] in ("core", "search"):
            lines += [
                f"### {payload['phase']} ({vendor})",
                "",
                *(notes + [""] if notes else []),
                "| operation | rows | p50 ms | p95 ms | floor p50 ms | ratio p50 | cpu p50 ms (ours / floor) |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for r in payload["results"]:
                ours, floor = r["ours"], r.get("floor")
                floor_text = _ms(floor["p50"]) if floor else "–"
                ratio = _ratio(ours, floor)
                if r.get("floor_write"):
                    floor_text += f" (write only {_ms(r['floor_write']['p50'])})"
                    ratio += f" ({_ratio(ours, r['floor_write'])})"
                cpu = "–"
                if ours.get("cpu_p50") is not None and floor and floor.get("cpu_p50"):
                    cpu = f"{_ms(ours['cpu_p50'])} / {_ms(floor['cpu_p50'])} = {ours['cpu_p50'] / floor['cpu_p50']:.1f}×"
                lines.append(
                    f"| {r['op']} | {r['size']:,} | {_ms(ours['p50'])} | {_ms(ours['p95'])} | {floor_text} | {ratio} "
                    f"| {cpu} |"
                )
        else:
            lines += [
                f"### http ({vendor})",
                "",
                *(notes + [""] if notes else []),
                "| endpoint | connections | requests | errors | req/s | ÷ bare DRF | ÷ DRF's own way | p50 ms | p99 ms "
                "| p99 ÷ p50 | worker CPU ms/req | PostgreSQL CPU ms/req |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for r in payload["results"]:
                ratio = f"{r['ratio']:.2f}" if r.get("ratio") is not None else "–"
                own_ratio = f"{r['own_ratio']:.2f}" if r.get("own_ratio") is not None else "–"
                cpu = f"{r['cpu_per_request']:.2f}" if r.get("cpu_per_request") is not None else "–"
                db_cpu = f"{r['db_cpu_per_request']:.2f}" if r.get("db_cpu_per_request") is not None else "–"
                lines.append(
                    f"| {r['endpoint']} | {r['connections']} | {r['requests']} | {r['errors']} | {r['throughput']:.0f} "
                    f"| {ratio} | {own_ratio} | {_ms(r['p50'])} | {_ms(r['p99'])} | {r['p99'] / r['p50']:.1f} | {cpu} "
                    f"| {db_cpu} |"
                )
        lines.append("")
    return "\n".join(lines)
