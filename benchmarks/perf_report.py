"""The machine a run happened on, and the results as Markdown tables."""

from __future__ import annotations

import os
import platform


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


def render(report: dict) -> str:
    lines = ["machine: " + ", ".join(f"{k} {v}" for k, v in report["machine"].items()), ""]
    for payload in report["phases"]:
        vendor = payload["vendor"]
        if payload["phase"] in ("core", "search"):
            lines += [
                f"### {payload['phase']} ({vendor})",
                "",
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
                "| endpoint | clients | requests | errors | req/s | p50 ms | p95 ms |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for r in payload["results"]:
                lines.append(
                    f"| {r['endpoint']} | {r['clients']} | {r['requests']} | {r['errors']} | {r['throughput']:.0f} "
                    f"| {_ms(r['p50'])} | {_ms(r['p95'])} |"
                )
        lines.append("")
    return "\n".join(lines)
