"""The results as a Markdown table (with each target) and as a PNG chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

Row = tuple[str, str, str, str, str, bool | None]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def targets(results: dict[str, Any]) -> list[tuple[str, float, float, bool]]:
    """``(name, ratio, limit, met)`` for every target the results cover (limit: at most, except
    for the shares of the floor's rate, which are at least)."""
    out: list[tuple[str, float, float, bool]] = []

    def at_most(name: str, value: float, limit: float) -> None:
        out.append((name, value, limit, value <= limit))

    if "scenario_mcp" in results:
        at_most("MCP tools: p50 per run", results["scenario_mcp"]["ratio"]["p50"], 1.5)
    if "scenario_python" in results:
        at_most("Python tools: p50 per run", results["scenario_python"]["ratio"]["p50"], 1.3)
    if "streaming" in results:
        at_most("streaming: CPU per run", results["streaming"]["ratio"]["cpu"], 1.3)
    for key, limit in (("50ms/C=200", 0.85), ("50ms/C=1000", 0.70)):
        level = results.get("concurrency", {}).get(key)
        if level is not None:
            share = level["share_of_floor_rate"]
            out.append((f"{key}: share of floor runs/s", share, limit, share >= limit))
    for kind in ("history", "tools"):
        rows = results.get("growth", {}).get(kind, {})
        if "1000" in rows:
            at_most(f"1000 {kind}: CPU per turn / json.dumps", rows["1000"]["ratio"], 2.0)
    if "mcp_startup" in results:
        at_most("MCP start-up / SDK client", results["mcp_startup"]["ratio"], 1.2)
    if "import" in results:
        at_most("import toolnexus / 100 ms", results["import"]["seconds"] / 0.1, 1.0)
    return out


def table(results: dict[str, Any]) -> str:
    """Every figure, floor beside ours, as Markdown."""
    lines = [
        "| case | floor | toolnexus | ratio | floor on aiohttp | ratio to it |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def row(
        case: str, floor: str, ours: str, ratio: str, on_aiohttp: str = "", to_it: str = ""
    ) -> None:
        lines.append(f"| {case} | {floor} | {ours} | {ratio} | {on_aiohttp} | {to_it} |")

    for key, label in (("scenario_mcp", "MCP tools"), ("scenario_python", "Python tools")):
        if key in results:
            r = results[key]
            for stat, name in (("p50", "p50 wall"), ("p95", "p95 wall"), ("cpu", "CPU per run")):
                row(
                    f"{label}: {name}",
                    _us(r["floor"][stat]),
                    _us(r["ours"][stat]),
                    f"{r['ratio'][stat]:.2f}x",
                    _us(r["floor_aiohttp"][stat]),
                    f"{r['vs_aiohttp'][stat]:.2f}x",
                )
    for style, r in results.get("styles", {}).items():
        for stat, name in (("p50", "p50 wall"), ("cpu", "CPU per run")):
            row(
                f"Python tools, {style} style: {name}",
                _us(r["floor"][stat]),
                _us(r["ours"][stat]),
                f"{r['ratio'][stat]:.2f}x",
                _us(r["floor_aiohttp"][stat]),
                f"{r['vs_aiohttp'][stat]:.2f}x",
            )
    if "streaming" in results:
        r = results["streaming"]
        row(
            "streamed scenario: CPU per run",
            _us(r["floor"]["cpu"]),
            _us(r["ours"]["cpu"]),
            f"{r['ratio']['cpu']:.2f}x",
            _us(r["floor_aiohttp"]["cpu"]),
            f"{r['vs_aiohttp']['cpu']:.2f}x",
        )
    for key, level in _levels(results).items():
        f, o = level["floor"], level["ours"]
        row(
            f"{key}: runs/s",
            f"{f['runs_per_s']:,.0f}",
            f"{o['runs_per_s']:,.0f}",
            f"{level['share_of_floor_rate']:.0%} of floor",
        )
        row(
            f"{key}: p50 / p95",
            f"{_ms(f['p50'])} / {_ms(f['p95'])}",
            f"{_ms(o['p50'])} / {_ms(o['p95'])}",
            f"{o['p50'] / f['p50']:.2f}x",
        )
        row(f"{key}: CPU per run", _us(f["cpu"]), _us(o["cpu"]), f"{level['cpu_ratio']:.2f}x")
        row(
            f"{key}: of which garbage collection",
            _us(f.get("gc_cpu", 0)),
            _us(o.get("gc_cpu", 0)),
            "",
        )
        row(
            f"{key}: memory per run in flight",
            f"{f['bytes_per_run'] / 1024:,.1f} KiB",
            f"{o['bytes_per_run'] / 1024:,.1f} KiB",
            f"{o['bytes_per_run'] / max(f['bytes_per_run'], 1):.2f}x",
        )
        row(
            f"{key}: most in flight (timed / first requests)",
            f"{f['max_in_flight']:.0f} / {f['first_in_flight']}",
            f"{o['max_in_flight']:.0f} / {o['first_in_flight']}",
            "",
        )
    for kind in ("history", "tools"):
        for size, r in results.get("growth", {}).get(kind, {}).items():
            label = "messages" if kind == "history" else "tools"
            row(
                f"{size} {label} ({r['body_bytes'] / 1024:,.0f} KiB body): CPU per turn "
                f"(floor column: json.dumps)",
                _us(r["dumps"]),
                _us(r["ours"]),
                f"{r['ratio']:.2f}x dumps, {r['vs_floor']:.2f}x raw POST",
            )
    if "mcp_startup" in results:
        r = results["mcp_startup"]
        row("MCP start-up (floor: SDK client)", _ms(r["sdk"]), _ms(r["ours"]), f"{r['ratio']:.2f}x")
    if "import" in results:
        row(
            "import toolnexus (budget 100 ms)",
            "100.0 ms",
            _ms(results["import"]["seconds"]),
            f"{results['import']['seconds'] / 0.1:.2f}x",
        )
    machine = results.get("machine")
    if machine:
        before, after = machine["load_before"][0], machine["load_after"][0]
        lines += [
            "",
            f"Python {machine['python']} on {machine['cores']} cores; {machine['rounds']} "
            f"rounds, medians; load average {before:.1f} before, {after:.1f} after.",
        ]
    lines += ["", "| target | measured | limit | met |", "| --- | ---: | ---: | :---: |"]
    for name, value, limit, met in targets(results):
        lines.append(f"| {name} | {value:.2f} | {limit:.2f} | {'yes' if met else 'no'} |")
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> bool:
    """Draw the PNG; ``False`` when matplotlib is not installed (``pip install .[bench]``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), width_ratios=(1.25, 1))
    names, values, limits = [], [], []
    for name, value, limit, _ in targets(results):
        if "share" in name:  # a rate: shown as cost, the floor's rate over ours
            name, value, limit = (
                name.replace("share of floor runs/s", "floor runs/s ÷ ours"),
                (1 / value),
                1 / limit,
            )
        names.append(name)
        values.append(value)
        limits.append(limit)
    ys = range(len(names))
    colours = ["#3a7d44" if v <= lim else "#c0392b" for v, lim in zip(values, limits, strict=True)]
    left.barh(list(ys), values, color=colours)
    left.scatter(limits, list(ys), marker="|", s=300, color="black", label="target", zorder=3)
    left.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    left.set_yticks(list(ys), names, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("cost relative to the floor (1.0 = the floor)")
    left.set_title("toolnexus / floor, same run (green: target met)")
    left.legend(loc="lower right", fontsize=8)
    levels = _levels(results)
    for delay, style in (("0ms", "-"), ("50ms", "--")):
        keys = [k for k in levels if k.startswith(delay + "/")]
        xs = [int(k.split("C=")[1]) for k in keys]
        for impl, colour in (("floor", "#7f8c8d"), ("ours", "#2c6fbb")):
            rate = [levels[k][impl]["runs_per_s"] for k in keys]
            right.plot(xs, rate, style, marker="o", color=colour, label=f"{impl}, {delay} model")
    if not levels:
        right.axis("off")
    else:
        _throughput_axes(right, levels)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _throughput_axes(right: Any, levels: dict[str, Any]) -> None:
    right.set_xscale("log")
    right.set_yscale("log")
    all_levels = sorted({int(k.split("C=")[1]) for k in levels})
    right.set_xticks(all_levels, [str(c) for c in all_levels])
    right.minorticks_off()
    right.set_xlabel("conversations in flight (C)")
    right.set_ylabel("runs/s")
    right.set_title("throughput against concurrency")
    right.legend(fontsize=8)


def _levels(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results.get("concurrency", {}).items() if "C=" in k}
