"""FX graphs, as a record keeps them (`str(graph)`, graphs one after another), drawn as Mermaid flowcharts.

A box per node and an arrow per use; a node nobody uses is dashed. Several graphs (a graph break) are drawn
each in its own frame, with node ids of their own, so no arrow can cross from one graph into the other;
a dotted arrow between the frames marks the break. Parameters get short names: `linear1.weight`.
"""

from __future__ import annotations

import re

FX_NODE = re.compile(r"^\s*%(\w+) : .*?\[num_users=(\d+)\] = (\w+)\[target=([^\]]*)\](.*)$")
FX_RETURN = re.compile(r"^\s*return (.*)$")
GRAPH_START = re.compile(r"^graph\(.*\):\s*$", re.MULTILINE)


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
    parts = [p for p in target.split(".") if p not in ("default", "Tensor", "Scalar")]
    return parts[-1] if parts else target


def fx_to_mermaid(text: str) -> tuple[str, str]:
    """Mermaid flowchart source for the FX graph(s) printed in `text`, and an alt text for it."""
    lines = ["flowchart LR", "  classDef unused stroke-dasharray: 5 5"]
    graphs = split_graphs(text)
    framed = len(graphs) > 1
    summaries = []
    for index, graph in enumerate(graphs):
        prefix = f"g{index}_"
        if framed:
            lines.append(f'  subgraph {prefix}frame["graph {index + 1}"]')
        names, ops, unused = set(), [], []
        for line in graph.splitlines():
            node, ret = FX_NODE.match(line), FX_RETURN.match(line)
            if node:
                name, users, opcode, target, rest = node.groups()
                text_label = label(opcode, target)
                shape = f'(["{text_label}"])' if opcode == "placeholder" else f'["{text_label}"]'
                lines.append(f"    {prefix}{name}{shape}")
                for used in dict.fromkeys(re.findall(r"%(\w+)", rest)):
                    if used in names:
                        lines.append(f"    {prefix}{used} --> {prefix}{name}")
                if users == "0":  # computed, or passed in, for nothing
                    lines.append(f"    class {prefix}{name} unused")
                    unused.append(text_label)
                if opcode not in ("placeholder", "get_attr"):
                    ops.append(text_label)
                names.add(name)
            elif ret:
                lines.append(f'    {prefix}output(["output"])')
                for used in dict.fromkeys(re.findall(r"\b(\w+)\b", ret.group(1))):
                    if used in names:
                        lines.append(f"    {prefix}{used} --> {prefix}output")
        if framed:
            lines.append("  end")
        summaries.append(", ".join(ops) + (f" (unused: {', '.join(unused)})" if unused else ""))
    for index in range(len(graphs) - 1):
        lines.append(f"  g{index}_frame -. graph break .-> g{index + 1}_frame")
    alt = "; ".join(f"graph {i + 1}: {s}" for i, s in enumerate(summaries))
    return "\n".join(lines) + "\n", f"Computation graph ({alt})."


def components(mermaid: str) -> int:
    """How many disconnected parts the drawn nodes form, counting node-to-node arrows only (not the dotted
    arrow between frames); a test uses it to prove that two graphs stay apart."""
    nodes = set(re.findall(r"^\s+(g\d+_\w+?)[\[(]", mermaid, re.MULTILINE))
    parent = {n: n for n in nodes}

    def find(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for a, b in re.findall(r"^\s+(g\d+_\w+) --> (g\d+_\w+)$", mermaid, re.MULTILINE):
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    return len({find(n) for n in nodes})
