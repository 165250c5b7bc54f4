"""scripts/diagrams.py: FX graphs as a record keeps them, drawn as Mermaid flowcharts."""

from __future__ import annotations

import re

import pytest

from scripts import diagrams

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


def node_ids(mermaid: str) -> dict[str, set[str]]:
    """Graph prefix ('g0_') -> the node ids drawn in it."""
    found: dict[str, set[str]] = {}
    for node in re.findall(r"^\s+(g\d+_\w+?)[\[(]", mermaid, re.MULTILINE):
        prefix = re.match(r"g\d+_", node).group(0)
        found.setdefault(prefix, set()).add(node)
    return found


def arrows(mermaid: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s+(g\d+_\w+) --> (g\d+_\w+)$", mermaid, re.MULTILINE)


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
    mermaid, alt = diagrams.fx_to_mermaid(text)
    assert diagrams.components(mermaid) == 2
    ids = node_ids(mermaid)
    assert set(ids) == {"g0_", "g1_"}
    assert not ids["g0_"] & ids["g1_"]
    # Both graphs have a node named linear1, each drawn under an id of its own.
    assert {"g0_linear1", "g1_linear1"} <= ids["g0_"] | ids["g1_"]
    assert all(a[:3] == b[:3] for a, b in arrows(mermaid)), "an arrow crosses from one graph into the other"
    assert 'subgraph g0_frame["graph 1"]' in mermaid and 'subgraph g1_frame["graph 2"]' in mermaid
    assert "g0_frame -. graph break .-> g1_frame" in mermaid
    assert alt.startswith("Computation graph (graph 1: ") and "; graph 2: " in alt


def test_components_counts_disconnected_parts():
    assert diagrams.components("flowchart LR\n    g0_a([\"a\"])\n    g0_b[\"b\"]\n    g0_a --> g0_b\n") == 1
    assert diagrams.components("flowchart LR\n    g0_a([\"a\"])\n    g0_b[\"b\"]\n") == 2


def test_dynamo_names_shorten_to_the_parameter():
    assert diagrams.short("L_self_modules_linear1_parameters_weight_") == "linear1.weight"
    assert diagrams.short("l_self_modules_block_modules_linear1_buffers_running_mean_") == "block_linear1.running_mean"
    assert diagrams.short("L_x_") == "x"
    mermaid, _ = diagrams.fx_to_mermaid(DYNAMO)
    assert 'g0_l_self_modules_linear1_parameters_weight_(["linear1.weight"])' in mermaid
    assert '(["linear1.bias"])' in mermaid and '(["x"])' in mermaid
    assert 'g0_linear1["linear"]' in mermaid and 'g1_sin["sin"]' in mermaid


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
    mermaid, alt = diagrams.fx_to_mermaid(text)
    assert mermaid.startswith("flowchart LR\n") and "subgraph" not in mermaid and "graph break" not in mermaid
    assert "g0_x --> g0_sin" in mermaid and "g0_sin --> g0_sum_1" in mermaid and "g0_sum_1 --> g0_output" in mermaid
    assert mermaid.count("g0_x --> g0_mm") == 1, "an op using one input twice gets one arrow"
    assert "class g0_mm unused" in mermaid and "class g0_w unused" in mermaid and "class g0_sin unused" not in mermaid
    assert alt == "Computation graph (graph 1: sin, mm, .sum (unused: w, mm))."


def test_labels():
    assert diagrams.label("call_function", "torch.sin") == "sin"
    assert diagrams.label("call_function", "aten.mm.default") == "mm"
    assert diagrams.label("call_function", "aten.add.Tensor") == "add"
    assert diagrams.label("call_function", "<built-in method relu of type object at 0x7f00>") == "relu"
    assert diagrams.label("call_method", "sum") == ".sum"
    assert diagrams.label("get_attr", "linear1.weight") == "linear1.weight"


def test_empty_text_draws_nothing():
    assert diagrams.split_graphs("") == []
    mermaid, _ = diagrams.fx_to_mermaid("")
    assert diagrams.components(mermaid) == 0
