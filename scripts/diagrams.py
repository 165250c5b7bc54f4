"""Diagrams as SVG made before any browser sees them: Graphviz's DOT language, laid out by graphviz-pure.

graphviz-pure is Graphviz (what torch.fx's own graph drawer uses) ported to Rust and shipped as a wheel: a
pip install gives the `graphviz-pure` command, with no system binary, and it writes the same bytes on every
platform, so a committed SVG can be checked against its source. Pages therefore need no diagram JavaScript,
and a notebook gets the very same image.

Two kinds of diagram:
- the drawn illustrations of the pages, DOT files in docs/assets/diagrams/ with their SVG committed beside
  them (`python -m scripts.diagrams` remakes every SVG; a test checks that each is up to date);
- FX graphs, as a record keeps them (`str(graph)`, graphs one after another), drawn top to bottom when a
  page is built (scripts/directives.py caches the SVG by content). A box per node and an arrow per use; a
  node nobody uses is dashed. Several graphs (a graph break) are drawn each in its own frame, with node ids
  of their own, so no arrow can cross from one graph into the other; a dotted arrow between the frames marks
  the break. Parameters get short names: `linear1.weight`.

Every diagram is laid out top to bottom and fits the page's column (COLUMN_PX); Graphviz's units are drawn
as CSS pixels, so a 14-point label is 14 px of text at the natural size.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from scripts.records import content_key

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "docs" / "assets" / "diagrams"
COLUMN_PX = 740  # Material's content column is 748 px wide at a 1280 px window: a diagram stays inside it
# Graphviz measures text with Arial's metrics; Liberation Sans and Arimo share them, where Arial is missing.
FONT = "Arial, Helvetica, 'Liberation Sans', Arimo, sans-serif"
# The look every diagram shares: prepended to a DOT file's own attributes, which may override it.
STYLE = f"""\
  graph [rankdir=TB, fontname="Arial", fontsize=14, nodesep=0.25, ranksep=0.35, pad=0.08,
         bgcolor="transparent", size="{COLUMN_PX / 72:.2f},100", labeljust=l, color="#9fa8da"];
  node [shape=box, style="rounded,filled", fillcolor="#e8eaf6", color="#3f51b5", fontname="Arial",
        fontsize=14, margin="0.12,0.05", height=0.3];
  edge [color="#555555", fontname="Arial", fontsize=13, fontcolor="#333333", arrowsize=0.7];
"""

FX_NODE = re.compile(r"^\s*%(\w+) : .*?\[num_users=(\d+)\] = (\w+)\[target=([^\]]*)\](.*)$")
FX_RETURN = re.compile(r"^\s*return (.*)$")
GRAPH_START = re.compile(r"^graph\(.*\):\s*$", re.MULTILINE)


class DiagramError(Exception):
    pass


def split_graphs(text: str) -> list[str]:
    starts = [m.start() for m in GRAPH_START.finditer(text)]
    if not starts:
        return [text] if text.strip() else []
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def short(name: str) -> str:
    """Dynamo's flattened names, made readable: 'L_self_modules_linear1_parameters_weight_' -> 'linear1.weight'."""
    name = re.sub(r"^[lL]_+", "", name).rstrip("_")
    name = re.sub(r"^self_+", "", name)
    name = re.sub(r"modules_+", "", name)
    name = re.sub(r"_+(parameters|buffers)_+", ".", name)
    name = re.sub(r"^L__self___", "", name)
    return name or "input"


def label(opcode: str, target: str) -> str:
    """'torch.sin' -> 'sin', 'aten.mm.default' -> 'mm', a method -> '.sum', an input -> its short name."""
    if opcode == "call_method":
        return "." + target
    if opcode in ("placeholder", "get_attr", "call_module"):
        return short(target)
    target = re.sub(r"<built-in (?:method|function) (\w+).*", r"\1", target)
    aten = re.search(r"\baten\.(\w+)", target)
    if aten:  # 'aten.sum.dim_IntList' -> 'sum': the op, not its overload
        return aten.group(1)
    parts = [p for p in target.split(".") if p not in ("default", "Tensor", "Scalar")]
    return parts[-1] if parts else target


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fx_to_dot(text: str) -> tuple[str, str]:
    """DOT source for the FX graph(s) printed in `text`, drawn top to bottom, and an alt text for it."""
    lines = ["digraph fx {", STYLE.rstrip(), "  compound=true;"]
    graphs = split_graphs(text)
    framed = len(graphs) > 1
    summaries, ends = [], []
    for index, graph in enumerate(graphs):
        prefix = f"g{index}_"
        pad = "    " if framed else "  "
        if framed:
            lines.append(f"  subgraph cluster_{prefix}frame {{")
            lines.append(f'    label="graph {index + 1}";')
        names, ops, unused, drawn = set(), [], [], []
        for line in graph.splitlines():
            node, ret = FX_NODE.match(line), FX_RETURN.match(line)
            if node:
                name, users, opcode, target, rest = node.groups()
                text_label = label(opcode, target)
                attrs = [f"label={quoted(text_label)}"]
                if opcode in ("placeholder", "get_attr"):  # values passed in: white, like the output
                    attrs.append('fillcolor="white"')
                if users == "0":  # computed, or passed in, for nothing
                    attrs.append('style="rounded,filled,dashed"')
                    unused.append(text_label)
                lines.append(f"{pad}{prefix}{name} [{', '.join(attrs)}];")
                drawn.append(f"{prefix}{name}")
                for used in dict.fromkeys(re.findall(r"%(\w+)", rest)):
                    if used in names:
                        lines.append(f"{pad}{prefix}{used} -> {prefix}{name};")
                if opcode not in ("placeholder", "get_attr"):
                    ops.append(text_label)
                names.add(name)
            elif ret:
                lines.append(f'{pad}{prefix}output [label="output", fillcolor="white", shape=oval];')
                drawn.append(f"{prefix}output")
                for used in dict.fromkeys(re.findall(r"\b(\w+)\b", ret.group(1))):
                    if used in names:
                        lines.append(f"{pad}{prefix}{used} -> {prefix}output;")
        if framed:
            lines.append("  }")
        ends.append((drawn[0], drawn[-1]) if drawn else None)
        summaries.append(", ".join(ops) + (f" (unused: {', '.join(unused)})" if unused else ""))
    for index in range(len(graphs) - 1):
        if ends[index] and ends[index + 1]:  # frame to frame: from the last node drawn to the next's first
            lines.append(f"  {ends[index][1]} -> {ends[index + 1][0]} [ltail=cluster_g{index}_frame, "
                         f'lhead=cluster_g{index + 1}_frame, style=dotted, label=" graph break"];')
    lines.append("}")
    alt = "; ".join(f"graph {i + 1}: {s}" for i, s in enumerate(summaries))
    return "\n".join(lines) + "\n", f"Computation graph ({alt})."


def components(dot: str) -> int:
    """How many disconnected parts the drawn nodes form, counting node-to-node arrows only (not the dotted
    arrow between frames); a test uses it to prove that two graphs stay apart."""
    nodes = set(re.findall(r"^\s+(g\d+_\w+) \[", dot, re.MULTILINE))
    parent = {n: n for n in nodes}

    def find(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for a, b in re.findall(r"^\s+(g\d+_\w+) -> (g\d+_\w+);$", dot, re.MULTILINE):
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    return len({find(n) for n in nodes})


def graphviz() -> str:
    """The graphviz-pure command the wheel installed beside this Python (or on PATH)."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "graphviz-pure").is_file():
            return str(folder / "graphviz-pure")
    found = shutil.which("graphviz-pure")
    if found is None:
        raise DiagramError("graphviz-pure is not installed: pip install -c ci/constraints.txt '.[docs]'")
    return found


def with_style(dot: str) -> str:
    """A DOT file's text with the shared look put first inside its graph, so its own attributes win."""
    head, brace, body = dot.partition("{")
    if not brace:
        raise DiagramError("not a DOT graph: no '{'")
    return f"{head}{{\n{STYLE}{body}"


def render(dot: str) -> str:
    """The SVG of one DOT graph, made to sit in a page: sized in CSS pixels, fonts as the site's sans-serif,
    no ids (several diagrams share a page or a notebook) and no comments or background."""
    done = subprocess.run([graphviz(), "-Tsvg"], input=with_style(dot), capture_output=True, text=True)
    if done.returncode != 0:
        raise DiagramError(f"graphviz-pure failed: {done.stderr.strip()}")
    svg = done.stdout
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->\n?", "", svg, flags=re.DOTALL)
    svg = re.sub(r"<title>.*?</title>\n?", "", svg)
    svg = re.sub(r' id="[^"]*"', "", svg)
    svg = re.sub(r'<polygon fill="transparent" stroke="transparent"[^>]*/>\n?', "", svg)
    svg = re.sub(r'<polygon fill="(?:white|transparent)" stroke="none"[^>]*/>\n?', "", svg, count=1)
    svg = re.sub(r'width="([\d.]+)pt" height="([\d.]+)pt"',
                 lambda m: f'width="{float(m.group(1)):g}" height="{float(m.group(2)):g}"', svg, count=1)
    svg = re.sub(r' font-family="[^"]*" font-size="([\d.]+)"',
                 lambda m: f' style="font-family: {FONT}; font-size: {float(m.group(1)):g}px"', svg)
    svg = svg.replace(' xml:space="preserve"', "")
    return svg


def on_white(svg: str) -> str:
    """The diagram on a white ground, for a notebook, whose theme may be dark (the site inverts it instead)."""
    width, height = size(svg)
    opening = re.search(r"<svg\b[^>]*>\n?", svg).end()
    return svg[:opening] + f'<rect width="{width:g}" height="{height:g}" fill="white"/>\n' + svg[opening:]


def size(svg: str) -> tuple[float, float]:
    """The drawn width and height of a rendered diagram, in CSS pixels."""
    found = re.search(r'<svg width="([\d.]+)" height="([\d.]+)"', svg)
    if found is None:
        raise DiagramError("an SVG without a width and height")
    return float(found.group(1)), float(found.group(2))


def cached(dot: str, cache: Path) -> Path:
    """The SVG of `dot`, from `cache` when this source and this drawing code made it before."""
    digest = content_key(dot, Path(__file__))
    path = cache / f"{digest}.diagram.svg"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")  # builds and test workers may draw it at once
        part.write_text(render(dot))
        os.replace(part, path)
    return path


def sources() -> list[Path]:
    return sorted(SOURCES.glob("*.gv"))


def main() -> int:
    """Remake the SVG of every DOT file in docs/assets/diagrams/."""
    for source in sources():
        svg = render(source.read_text())
        source.with_suffix(".svg").write_text(svg)
        width, height = size(svg)
        print(f"{source.with_suffix('.svg').relative_to(ROOT)}: {width:g} x {height:g} px", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
