"""Build the figures and notebooks the pages show, from the committed records; no GPU needed.

    python scripts/render_assets.py           # (re)build whatever is missing or out of date
    python scripts/render_assets.py --check   # list what is missing or out of date; exit 1 if any

Figures, into docs/figures/<device>/<snippet path without .py>/<name>.{light,dark}.svg, come from:
  - every profiler trace a snippet wrote (files/*trace*.json): one figure, "timeline", with a CPU lane
    (the ops Python dispatched) above a GPU lane (one bar per kernel) for each trace, all on one time
    scale, so eager and compiled can be compared by eye;
  - every FX graph a snippet saved as text (files/<name>.fxgraph.txt, `str(gm.graph)`, several graphs one
    after another for a graph break): one Mermaid diagram, "<name>", a box per node and an arrow per use,
    nodes nobody uses dashed, each graph in its own frame;
  - every entry of results.json's "figures" object, keyed by figure name, by its "kind":
      bars       {"title", "unit", "bars": [{"label", "value", "lo"?, "hi"?}]}
      sweep      {"title", "x_label", "y_label", "x": [...], "series": [{"label", "y", "lo"?, "hi"?}],
                  "mark"?: {"x", "label"}}                      (log-log; spread shaded; a marked x)
      bandwidth  {"title", "peak_gbps", "peak_label", "bars": [{"label", "gbps"}]}
Each figure is drawn twice, for Material's light and dark palettes. figures.json beside them holds each
figure's alt text and the hash of what it was drawn from, so a test can tell a stale figure.

Notebooks, into docs/notebooks/<page path, / as __>.ipynb: one per page that includes snippets, holding
that page's snippets in page order as code cells with their recorded stdout (CUDA where recorded, else
CPU) as outputs. Nothing is executed. The hook links each page to its notebook.

Same records in, same files out: SVGs carry no date and a fixed id salt.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import regenerate  # noqa: E402  (the record layout lives there)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
OUTPUTS = DOCS / "outputs"
FIGURES = DOCS / "figures"
NOTEBOOKS = DOCS / "notebooks"
SNIPPETS = ROOT / "snippets"
DEVICES = ("cuda", "cpu")
RENDERER_HASH = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

PALETTES = {
    "light": {"fg": "#1f2330", "grid": "#d5d8e0", "series": ["#3f51b5", "#e65100", "#00897b", "#8e24aa"]},
    "dark": {"fg": "#e3e6ef", "grid": "#4a4f5c", "series": ["#8c9eff", "#ffab40", "#4db6ac", "#ce93d8"]},
}
INCLUDE = re.compile(r"""--8<--\s+["']snippets/([^"':]+\.py)(?::[\w-]+)?["']""")
DIRECTIVE_SNIPPET = re.compile(r"<!--\s*md:(?:output|figure|value)\s+([^\s:]+\.py)")


def digest(*parts: bytes) -> str:
    h = hashlib.sha256(RENDERER_HASH.encode())
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------- figures


def records() -> list[tuple[str, Path]]:
    return [(device, folder) for device in DEVICES for folder in regenerate.find_records(OUTPUTS, device)]


def figure_sources(record: Path) -> dict[str, dict]:
    """name -> {"kind", "spec" or "traces", "hash"} for one record."""
    sources = {}
    # Eager first, so it sits above whatever it is compared with.
    traces = sorted((record / "files").glob("*trace*.json"), key=lambda t: (not t.name.startswith("eager"), t.name))
    if traces:
        sources["timeline"] = {"kind": "timeline", "traces": traces,
                               "hash": digest(*(t.read_bytes() for t in traces))}
    for graph in sorted((record / "files").glob("*.fxgraph.txt")):
        name = graph.name[: -len(".fxgraph.txt")]
        sources[name] = {"kind": "graph", "graph": graph, "hash": digest(graph.read_bytes())}
    results = record / "files" / "results.json"
    if results.exists():
        specs = json.loads(results.read_text()).get("figures", {})
        for name, spec in sorted(specs.items()):
            blob = json.dumps(spec, sort_keys=True).encode()
            sources[name] = {"kind": spec.get("kind"), "spec": spec, "hash": digest(blob)}
    return sources


def figure_dir(device: str, record: Path) -> Path:
    return FIGURES / device / record.relative_to(OUTPUTS / device)


def stale_figures() -> list[str]:
    stale = []
    for device, record in records():
        folder = figure_dir(device, record)
        index = _read_json(folder / "figures.json") or {}
        for name, source in figure_sources(record).items():
            entry = index.get(name)
            files = figure_files(folder, name, source["kind"])
            if not entry or entry.get("hash") != source["hash"] or not all(f.exists() for f in files):
                stale.append(f"{folder.relative_to(ROOT)}/{name}")
    return stale


def figure_files(folder: Path, name: str, kind: str) -> list[Path]:
    if kind == "graph":
        return [folder / f"{name}.mmd"]  # Mermaid draws it in the page, in the page's palette
    return [folder / f"{name}.{palette}.svg" for palette in PALETTES]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def setup_matplotlib() -> None:
    """The SVG backend with a fixed id salt and text kept as text: same data, same bytes."""
    import matplotlib

    matplotlib.use("svg")
    matplotlib.rcParams.update({"svg.hashsalt": "mlc", "svg.fonttype": "none", "font.size": 10})


def render_figures(force: bool = False) -> int:
    setup_matplotlib()
    count = 0
    for device, record in records():
        sources = figure_sources(record)
        if not sources:
            continue
        folder = figure_dir(device, record)
        index = _read_json(folder / "figures.json") or {}
        for name, source in sources.items():
            files = figure_files(folder, name, source["kind"])
            if not force and index.get(name, {}).get("hash") == source["hash"] and all(f.exists() for f in files):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            if source["kind"] == "graph":
                text, alt = fx_to_mermaid(source["graph"].read_text())
                files[0].write_text(text)
            else:
                for palette in PALETTES:
                    alt = draw(source, palette, folder / f"{name}.{palette}.svg")
            index[name] = {"hash": source["hash"], "alt": alt}
            count += 1
            print(f"figure  {folder.relative_to(ROOT)}/{name}", flush=True)
        (folder / "figures.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return count


def draw(source: dict, palette: str, path: Path) -> str:
    import matplotlib.pyplot as plt

    colors = PALETTES[palette]
    with plt.rc_context({
        "text.color": colors["fg"], "axes.labelcolor": colors["fg"], "axes.edgecolor": colors["grid"],
        "xtick.color": colors["fg"], "ytick.color": colors["fg"], "grid.color": colors["grid"],
        "axes.facecolor": "none", "figure.facecolor": "none", "savefig.transparent": True,
    }):
        kind = source["kind"]
        if kind == "timeline":
            fig, alt = draw_timeline(source["traces"], colors)
        elif kind in ("bars", "bandwidth"):
            fig, alt = draw_bars(source["spec"], colors, kind)
        elif kind == "sweep":
            fig, alt = draw_sweep(source["spec"], colors)
        else:
            raise SystemExit(f"render_assets: unknown figure kind {kind!r} in {path}")
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        plt.close(fig)
    return alt


def trace_lanes(trace_path: Path) -> tuple[str, list, list, float]:
    """(title, CPU bars, GPU bars, span) of one Chrome trace; bars are (start µs, length µs, label)."""
    events = [e for e in json.loads(trace_path.read_text()).get("traceEvents", []) if e.get("ph") == "X"]
    annotations = [e for e in events if e.get("cat") == "user_annotation"]
    t0 = min((e["ts"] for e in annotations), default=min((e["ts"] for e in events), default=0))
    cpu_ops = sorted((e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime")), key=lambda e: e["ts"])
    top, end = [], -1.0
    for e in cpu_ops:  # keep the outermost calls: children sit inside their parent's bar
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e.get("dur", 0)
    gpu = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
    def bars(items):
        return [(e["ts"] - t0, e.get("dur", 0), short_name(e["name"])) for e in items]
    cpu_bars, gpu_bars = bars(top), bars(gpu)
    span = max((s + d for s, d, _ in cpu_bars + gpu_bars), default=1.0)
    title = trace_path.stem.replace("_trace", "").replace("_", " ")
    return title, cpu_bars, gpu_bars, span


def short_name(name: str) -> str:
    name = name.removeprefix("void ").split("<")[0].split("(")[0]
    return name.removeprefix("aten::").split("::")[-1]


def draw_timeline(traces: list[Path], colors: dict):
    import matplotlib.pyplot as plt

    lanes = [trace_lanes(t) for t in traces]
    span = max(lane[3] for lane in lanes)
    rows = [(title, side, bars) for title, cpu, gpu, _ in lanes for side, bars in (("CPU", cpu), ("GPU", gpu))
            if bars or side == "CPU"]
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.1))
    labels = []
    for row, (title, side, bars) in enumerate(reversed(rows)):
        color = colors["series"][0] if side == "CPU" else colors["series"][1]
        for start, length, label in bars:
            ax.broken_barh([(start, max(length, span / 2000))], (row - 0.35, 0.7), color=color, alpha=0.9)
            if length > span / 14:
                ax.text(start + length / 2, row, label, ha="center", va="center", fontsize=8, color="white")
        labels.append(f"{title}: {side}")
    ax.set_yticks(range(len(rows)), labels)
    ax.set_xlim(0, span * 1.02)
    ax.set_xlabel("time since the profiled region began (µs)")
    ax.grid(axis="x", alpha=0.6)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    counts = ", ".join(f"{t}: {len(c)} CPU calls, {len(g)} GPU kernels" for t, c, g, _ in lanes)
    alt = f"Timeline of the profiled call on one time axis ({counts})."
    return fig, alt


def draw_bars(spec: dict, colors: dict, kind: str):
    import matplotlib.pyplot as plt

    bars = spec["bars"]
    key = "gbps" if kind == "bandwidth" else "value"
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(bars) + 1.2))
    positions = list(range(len(bars)))[::-1]
    values = [b[key] for b in bars]
    errors = None
    if all("lo" in b and "hi" in b for b in bars):
        errors = [[b[key] - b["lo"] for b in bars], [b["hi"] - b[key] for b in bars]]
    ax.barh(positions, values, xerr=errors, color=colors["series"][: len(bars)] or colors["series"][0],
            ecolor=colors["fg"], capsize=4, height=0.6)
    ax.set_yticks(positions, [b["label"] for b in bars])
    unit = "GB/s" if kind == "bandwidth" else spec.get("unit", "")
    ends = [b.get("hi", b[key]) for b in bars]
    for pos, value, end in zip(positions, values, ends):
        ax.text(end, pos, f"  {readable(value)} {unit}", va="center", fontsize=9)
    if kind == "bandwidth":
        ax.axvline(spec["peak_gbps"], color=colors["fg"], linestyle="--", linewidth=1)
        ax.text(spec["peak_gbps"], len(bars) - 0.4, f" {spec.get('peak_label', 'peak')}", fontsize=8)
    ax.set_xlabel(unit)
    ax.set_xlim(0, max(ends + ([spec["peak_gbps"]] if kind == "bandwidth" else [])) * 1.3)
    ax.set_title(spec.get("title", ""), loc="left", fontsize=10)
    ax.grid(axis="x", alpha=0.6)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    alt = f"{spec.get('title', 'Bar chart')}: " + "; ".join(f"{b['label']} {readable(b[key])} {unit}" for b in bars)
    return fig, alt


def readable(value: float) -> str:
    """1234.5 -> '1,234'; 12.345 -> '12.3'; 0.01234 -> '0.0123'."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def draw_sweep(spec: dict, colors: dict):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2))
    for color, series in zip(colors["series"], spec["series"]):
        ax.plot(spec["x"], series["y"], marker="o", markersize=3, color=color, label=series["label"])
        if "lo" in series and "hi" in series:
            ax.fill_between(spec["x"], series["lo"], series["hi"], color=color, alpha=0.2, linewidth=0)
    mark = spec.get("mark")
    if mark and mark.get("x") is not None:
        ax.axvline(mark["x"], color=colors["fg"], linestyle="--", linewidth=1)
        ax.text(mark["x"], ax.get_ylim()[1], f" {mark.get('label', '')}", va="top", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(spec.get("x_label", ""))
    ax.set_ylabel(spec.get("y_label", ""))
    ax.set_title(spec.get("title", ""), loc="left", fontsize=10)
    ax.grid(alpha=0.6, which="both")
    ax.legend(frameon=False)
    names = ", ".join(s["label"] for s in spec["series"])
    where = f"; marked at {mark['x']} ({mark.get('label', '')})" if mark and mark.get("x") is not None else ""
    alt = f"{spec.get('title', 'Sweep')}: {names} against {spec.get('x_label', 'x')}{where}."
    return fig, alt


FX_NODE = re.compile(r"^\s*%(\w+) : .*?\[num_users=(\d+)\] = (\w+)\[target=([^\]]*)\](.*)$")
FX_RETURN = re.compile(r"^\s*return (.*)$")


def fx_to_mermaid(text: str) -> tuple[str, str]:
    """Mermaid flowchart source for the FX graph(s) printed in `text`, and an alt text for it."""
    lines = ["flowchart LR", "  classDef unused stroke-dasharray: 5 5, opacity: 0.6"]
    graphs = [g for g in re.split(r"^graph\(\):\s*$", text, flags=re.MULTILINE) if g.strip()]
    summaries = []
    for index, graph in enumerate(graphs):
        prefix = f"g{index}_"
        framed = len(graphs) > 1  # a graph break: one frame per graph
        if framed:
            lines.append(f'  subgraph {prefix}frame["graph {index + 1}"]')
        names, ops, unused = set(), [], []
        for line in graph.splitlines():
            node, ret = FX_NODE.match(line), FX_RETURN.match(line)
            if node:
                name, users, opcode, target, rest = node.groups()
                label = fx_label(opcode, target)
                shape = f'(["{label}"])' if opcode == "placeholder" else f'["{label}"]'
                lines.append(f"    {prefix}{name}{shape}")
                for used in re.findall(r"%(\w+)", rest):
                    if used in names:
                        lines.append(f"    {prefix}{used} --> {prefix}{name}")
                if users == "0":  # computed, or passed in, for nothing
                    lines.append(f"    class {prefix}{name} unused")
                    unused.append(label)
                if opcode not in ("placeholder", "get_attr"):
                    ops.append(label)
                names.add(name)
            elif ret:
                lines.append(f'    {prefix}output(["output"])')
                for used in re.findall(r"\b(\w+)\b", ret.group(1)):
                    if used in names:
                        lines.append(f"    {prefix}{used} --> {prefix}output")
        if framed:
            lines.append("  end")
        summaries.append(", ".join(ops) + (f" (unused: {', '.join(unused)})" if unused else ""))
    alt = "; ".join(f"graph {i + 1}: {s}" for i, s in enumerate(summaries))
    return "\n".join(lines) + "\n", f"Computation graph ({alt})."


def fx_label(opcode: str, target: str) -> str:
    """'torch.sin' -> 'sin', 'aten.mm.default' -> 'mm', a method -> '.sum', an input -> its name."""
    if opcode == "call_method":
        return "." + target
    if opcode in ("placeholder", "get_attr", "call_module"):
        return target
    parts = [p for p in target.split(".") if p not in ("default", "Tensor", "Scalar")]
    return parts[-1] if parts else target


# ----------------------------------------------------------------------------------------- notebooks


FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def fenced_segments(markdown: str) -> list[tuple[bool, str]]:
    """Split Markdown into (inside a fenced code block?, text), so directives shown as code stay code."""
    segments: list[tuple[bool, list[str]]] = [(False, [])]
    fence = None
    for line in markdown.splitlines(keepends=True):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            segments.append((True, [line]))
        elif fence is not None:
            segments[-1][1].append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):].strip():
                fence = None
                segments.append((False, []))
        else:
            segments[-1][1].append(line)
    return [(code, "".join(lines)) for code, lines in segments if lines]


def page_snippets(page: Path) -> list[str]:
    """The snippets a page shows, in the order it first shows them (examples inside a ```markdown
    block, as on the contributing page, do not count)."""
    found, offset = [], 0
    for is_code, text in fenced_segments(page.read_text()):
        if not is_code:
            found += [(offset + m.start(), m.group(1)) for m in DIRECTIVE_SNIPPET.finditer(text)]
        elif not re.match(r"[ \t]*(`{3,}|~{3,})\s*(markdown|md)\b", text):
            found += [(offset + m.start(), m.group(1)) for m in INCLUDE.finditer(text)]
        offset += len(text)
    found.sort()
    ordered = []
    for _, name in found:
        if name not in ordered and (SNIPPETS / name).is_file():
            ordered.append(name)
    return ordered


def notebook_path(page: Path) -> Path:
    return NOTEBOOKS / (page.relative_to(DOCS).with_suffix("").as_posix().replace("/", "__") + ".ipynb")


def chapter_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "outputs" not in p.relative_to(DOCS).parts and page_snippets(p))


def best_record(snippet: str) -> tuple[str, Path] | None:
    for device in DEVICES:
        folder = OUTPUTS / device / snippet[: -len(".py")]
        if (folder / "manifest.json").exists():
            return device, folder
    return None


def notebook_inputs_hash(page: Path) -> str:
    parts = [page.read_bytes()]
    for snippet in page_snippets(page):
        parts.append((SNIPPETS / snippet).read_bytes())
        found = best_record(snippet)
        if found:
            parts += [(found[1] / "manifest.json").read_bytes(), (found[1] / "stdout.txt").read_bytes()]
    return digest(*parts)


def build_notebook(page: Path) -> dict:
    title = next((line[2:].strip() for line in page.read_text().splitlines() if line.startswith("# ")), page.stem)
    cells = [markdown_cell(
        f"# {title}\n\nThe snippets of this chapter of *ML compilation, executed*, with the outputs recorded "
        f"for the site. Each cell is a whole snippet file, runnable on its own: it picks CUDA when torch sees "
        f"a GPU and the CPU otherwise."
    )]
    for snippet in page_snippets(page):
        source = (SNIPPETS / snippet).read_text()
        found = best_record(snippet)
        outputs, note = [], "No output has been recorded for this snippet yet."
        if found:
            device, folder = found
            manifest = json.loads((folder / "manifest.json").read_text())
            env = manifest.get("environment", {})
            hardware = env.get("gpu") if device == "cuda" else env.get("cpu")
            note = (f"Output recorded on {device.upper()} ({hardware}, torch {env.get('torch')}) on "
                    f"{str(manifest.get('date', ''))[:10]}.")
            outputs = [{"output_type": "stream", "name": "stdout", "text": (folder / "stdout.txt").read_text()}]
        cells.append(markdown_cell(f"## {snippet}\n\n{note}"))
        cells.append({"cell_type": "code", "execution_count": None, "id": cell_id(snippet, "code"),
                      "metadata": {}, "outputs": outputs, "source": source})
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "mlc": {"page": page.relative_to(DOCS).as_posix(), "inputs": notebook_inputs_hash(page),
                    "snippets": page_snippets(page)},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def markdown_cell(text: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id(text, "md"), "metadata": {}, "source": text}


def cell_id(text: str, kind: str) -> str:
    return f"{kind}-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def stale_notebooks() -> list[str]:
    stale = []
    for page in chapter_pages():
        notebook = _read_json(notebook_path(page))
        inputs = (notebook or {}).get("metadata", {}).get("mlc", {}).get("inputs")
        if inputs != notebook_inputs_hash(page):
            stale.append(str(notebook_path(page).relative_to(ROOT)))
    wanted = {notebook_path(p) for p in chapter_pages()}
    stale += [f"{p.relative_to(ROOT)} (no page)" for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p not in wanted]
    return stale


def render_notebooks(force: bool = False) -> int:
    NOTEBOOKS.mkdir(parents=True, exist_ok=True)
    count = 0
    stale = set(stale_notebooks())
    for page in chapter_pages():
        path = notebook_path(page)
        if force or str(path.relative_to(ROOT)) in stale:
            path.write_text(json.dumps(build_notebook(page), indent=1, ensure_ascii=False) + "\n")
            print(f"notebook {path.relative_to(ROOT)}", flush=True)
            count += 1
    wanted = {notebook_path(p) for p in chapter_pages()}
    for orphan in sorted(NOTEBOOKS.glob("*.ipynb")):
        if orphan not in wanted:
            orphan.unlink()
            print(f"removed  {orphan.relative_to(ROOT)} (its page shows no snippet)")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build docs/figures and docs/notebooks from the records.")
    parser.add_argument("--check", action="store_true", help="list what is missing or stale; exit 1 if any")
    parser.add_argument("--force", action="store_true", help="rebuild everything")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_figures() + stale_notebooks()
        for item in stale:
            print(f"stale  {item}")
        print(f"render_assets: {len(stale)} stale" + (": run python scripts/render_assets.py" if stale else ""))
        return 1 if stale else 0
    figures = render_figures(args.force)
    notebooks = render_notebooks(args.force)
    print(f"render_assets: {figures} figures and {notebooks} notebooks written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
