"""scripts/diagrams.py: FX graphs as records keep them, and the pages' illustrations, drawn as SVG by graphviz-pure."""

from __future__ import annotations

import re

import pytest

from scripts import chapters, diagrams

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

# Two graphs of one graph break, as torch.compile's Dynamo prints them (both use the module's linear1).
W, B = "l_self_modules_linear1_parameters_weight_", "l_self_modules_linear1_parameters_bias_"
LINEAR = "call_function[target=torch._C._nn.linear]"
DYNAMO = f"""\
graph():
    %l_x_ : [num_users=1] = placeholder[target=L_x_]
    %{W} : [num_users=1] = placeholder[target=L_{W[2:]}]
    %{B} : [num_users=1] = placeholder[target=L_{B[2:]}]
    %linear1 : [num_users=1] = {LINEAR}(args = (%l_x_, %{W}, %{B}), kwargs = {{}})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%linear1,), kwargs = {{}})
    return (relu,)
graph():
    %l_x_ : [num_users=1] = placeholder[target=L_x_]
    %{W} : [num_users=1] = placeholder[target=L_{W[2:]}]
    %linear1 : [num_users=1] = {LINEAR}(args = (%l_x_, %{W}), kwargs = {{}})
    %sin : [num_users=1] = call_function[target=torch.sin](args = (%linear1,), kwargs = {{}})
    return (sin,)
"""


def node_ids(dot: str) -> dict[str, set[str]]:
    """Graph prefix ('g0_') -> the node ids drawn in it."""
    found: dict[str, set[str]] = {}
    for node in re.findall(r"^\s+(g\d+_\w+) \[", dot, re.MULTILINE):
        prefix = re.match(r"g\d+_", node).group(0)
        found.setdefault(prefix, set()).add(node)
    return found


def arrows(dot: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s+(g\d+_\w+) -> (g\d+_\w+);$", dot, re.MULTILINE)


def traced_pair() -> str:
    """Two symbolically traced modules that both have a `linear1` parameter, printed as the runner keeps them."""
    torch = pytest.importorskip("torch")

    class First(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.linear1(x))

    class Second(First):
        def forward(self, x):
            return self.linear1(x).sin() + self.linear1.bias

    return "\n".join(str(torch.fx.symbolic_trace(m()).graph) for m in (First, Second))


@pytest.mark.parametrize("source", ["traced", "dynamo"])
def test_two_graphs_stay_two_parts_whose_node_ids_never_collide(source):
    text = traced_pair() if source == "traced" else DYNAMO
    dot, alt = diagrams.fx_to_dot(text)
    assert diagrams.components(dot) == 2
    ids = node_ids(dot)
    assert set(ids) == {"g0_", "g1_"}
    assert not ids["g0_"] & ids["g1_"]
    # Both graphs have a node named linear1, each drawn under an id of its own.
    assert {"g0_linear1", "g1_linear1"} <= ids["g0_"] | ids["g1_"]
    assert all(a[:3] == b[:3] for a, b in arrows(dot)), "an arrow crosses from one graph into the other"
    assert "subgraph cluster_g0_frame {\n    label=\"graph 1\";" in dot
    assert "subgraph cluster_g1_frame {\n    label=\"graph 2\";" in dot
    assert "[ltail=cluster_g0_frame, lhead=cluster_g1_frame, style=dotted, label=\" graph break\"]" in dot
    assert alt.startswith("Computation graph (graph 1: ") and "; graph 2: " in alt


def test_components_counts_disconnected_parts():
    assert diagrams.components('digraph {\n  g0_a [label="a"];\n  g0_b [label="b"];\n  g0_a -> g0_b;\n}\n') == 1
    assert diagrams.components('digraph {\n  g0_a [label="a"];\n  g0_b [label="b"];\n}\n') == 2


def test_dynamo_names_shorten_to_the_parameter():
    assert diagrams.short("L_self_modules_linear1_parameters_weight_") == "linear1.weight"
    assert diagrams.short("l_self_modules_block_modules_linear1_buffers_running_mean_") == "block_linear1.running_mean"
    assert diagrams.short("L_x_") == "x"
    dot, _ = diagrams.fx_to_dot(DYNAMO)
    assert 'g0_l_self_modules_linear1_parameters_weight_ [label="linear1.weight", fillcolor="white"];' in dot
    assert '[label="linear1.bias", fillcolor="white"]' in dot and '[label="x", fillcolor="white"]' in dot
    assert 'g0_linear1 [label="linear"];' in dot and 'g1_sin [label="sin"];' in dot


def test_one_graph_has_no_frame_and_marks_unused_nodes():
    text = (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %w : [num_users=0] = placeholder[target=w]\n"
        "    %sin : [num_users=1] = call_function[target=torch.sin](args = (%x,), kwargs = {})\n"
        "    %mm : [num_users=0] = call_function[target=aten.mm.default](args = (%x, %x), kwargs = {})\n"
        "    %sum_1 : [num_users=1] = call_method[target=sum](args = (%sin,), kwargs = {})\n"
        "    return sum_1\n"
    )
    dot, alt = diagrams.fx_to_dot(text)
    assert dot.startswith("digraph fx {\n") and "subgraph" not in dot and "graph break" not in dot
    assert "g0_x -> g0_sin;" in dot and "g0_sin -> g0_sum_1;" in dot and "g0_sum_1 -> g0_output;" in dot
    assert dot.count("g0_x -> g0_mm;") == 1, "an op using one input twice gets one arrow"
    dashed = set(re.findall(r"^\s+(g0_\w+) \[[^\]]*dashed", dot, re.MULTILINE))
    assert dashed == {"g0_mm", "g0_w"}, "only the nodes nobody uses are dashed"
    assert alt == "Computation graph (graph 1: sin, mm, .sum (unused: w, mm))."


def test_labels():
    assert diagrams.label("call_function", "torch.sin") == "sin"
    assert diagrams.label("call_function", "aten.mm.default") == "mm"
    assert diagrams.label("call_function", "aten.add.Tensor") == "add"
    assert diagrams.label("call_function", "aten.sum.dim_IntList") == "sum", "the op, not its overload"
    assert diagrams.label("call_function", "aten.where.self") == "where"
    assert diagrams.label("call_function", "<built-in method relu of type object at 0x7f00>") == "relu"
    assert diagrams.label("call_method", "sum") == ".sum"
    assert diagrams.label("get_attr", "linear1.weight") == "linear1.weight"


def test_empty_text_draws_nothing():
    assert diagrams.split_graphs("") == []
    dot, _ = diagrams.fx_to_dot("")
    assert diagrams.components(dot) == 0


def test_a_graph_is_drawn_top_to_bottom_as_svg_that_fits_the_column():
    dot, _ = diagrams.fx_to_dot(DYNAMO)
    svg = diagrams.render(dot)
    width, height = diagrams.size(svg)
    assert 0 < width <= diagrams.COLUMN_PX and height > width, "two small graphs, one above the other"
    assert svg.startswith("<svg ") and " id=" not in svg and "<!--" not in svg
    assert "font-size: 14px" in svg, "text sized in CSS pixels, as the browser test reads it"
    assert diagrams.size(diagrams.on_white(svg)) == (width, height)


def test_a_wide_graph_is_scaled_to_the_column():
    wide = "digraph w {\n" + "".join(f"  n{i} [label=\"a long label {i}\"];\n" for i in range(20)) + "}\n"
    width, _ = diagrams.size(diagrams.render(wide))
    assert width <= diagrams.COLUMN_PX


@pytest.mark.parametrize("source", diagrams.sources(), ids=lambda p: p.name)
def test_each_committed_diagram_is_drawn_from_its_source(source):
    """graphviz-pure writes the same bytes on every platform: a committed SVG is its DOT file's drawing
    (remake them with `python -m scripts.diagrams`), and it fits the column."""
    svg = diagrams.render(source.read_text())
    assert source.with_suffix(".svg").read_text() == svg, f"run: python -m scripts.diagrams ({source.name})"
    assert diagrams.size(svg)[0] <= diagrams.COLUMN_PX


def test_every_page_image_of_a_diagram_has_its_source():
    """Each docs/assets/diagrams/*.svg a page shows is made from a DOT file, and every DOT file is used."""
    docs = diagrams.ROOT / "docs"
    shown = {m for name in chapters.pages(docs) for m in re.findall(r"assets/diagrams/([\w-]+)\.svg",
                                                                     (docs / name).read_text())}
    assert shown == {p.stem for p in diagrams.sources()}
