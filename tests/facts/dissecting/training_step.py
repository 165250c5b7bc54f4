"""The check of snippets/dissecting/training_step.py: what dissecting/training.md says about it, held on every
record of it."""

import pytest
from facts import check


@check("dissecting/training_step.py")
def _(record):
    results = record.results
    # Functionalization: in-place ops become their out-of-place twins; a mutated input is written back
    # with one copy_ at the end.
    functionalize = results["functionalize"]
    assert functionalize["traced_in_place"] == ["relu_", "add_"]
    assert functionalize["functional_in_place"] == ["copy_"]
    assert functionalize["functional_ops"] == ["mul", "relu", "add", "add", "copy_"]
    assert "relu_.default" in record.section("functionalize")
    # Two Dynamo graphs (the step breaks at loss.backward()): the model with its loss, and the optimizer.
    assert results["dynamo_graphs"][0] == ["linear", "relu", "layer_norm", "linear", "mse_loss"]
    # One add_ per parameter. From torch 2.13 on, the learning rate is folded into add_'s alpha; 2.11 traces
    # a mul before each add_ (training.md says so).
    optimizer_graph = results["dynamo_graphs"][1]
    assert optimizer_graph.count("add_") == 4, optimizer_graph
    assert optimizer_graph == (["add_"] * 4 if record.made_with((2, 13)) else ["mul", "add_"] * 4), optimizer_graph
    assert "Dynamo graphs: 2" in record.section("step")
    # The optimizer's in-place updates, functionalized: four add, no in-place op left in the graph.
    optimizer = results["optimizer"]
    assert optimizer["dynamo_in_place"] == ["add_"] * 4
    functional = optimizer["functional_ops"]
    assert optimizer["functional_in_place"] == [] and functional.count("add") == 4
    assert set(functional) <= {"add", "mul"} and functional.count("mul") == optimizer_graph.count("mul")
    # The joint graph holds both passes; the partitioner cuts it into the two graphs.
    joint = record.section("joint")
    assert "tangents_1" in joint and "\nbw  " in joint and joint.startswith("fw  ")
    assert len(results["joint_ops"]) >= len(results["backward_ops"])
    assert "addmm" in results["forward_ops"] and "mm" in results["backward_ops"]
    for key in ("joint", "forward", "backward", "optimizer"):
        assert record.file(results["graphs"][key]["fxgraph"]).read_text().startswith("graph")
    # Min-cut saves fewer tensors, and fewer bytes, than the default partitioner; Inductor keeps what
    # min-cut keeps.
    count, size = results["saved_count"], results["saved_bytes"]
    # New activation memory: what forward made, less inputs, parameters, their views and aliases.
    new = results["new_activation_bytes"]
    assert 0 < new["min_cut"] < new["default"] and new["default"] < size["default"]
    assert new["min_cut"] <= size["min_cut"]
    assert "alias" not in results["new_activations"]["default"]
    assert not any(name.startswith("primals") or name.startswith("permute")
                   for names in results["new_activations"].values() for name in names)
    assert results["new_activation_ratio"] == new["default"] / new["min_cut"]
    assert count["min_cut"] < count["default"] and size["min_cut"] < size["default"]
    if record.device == "cpu":
        assert results["autograd_saved_count"]["inductor"] == count["min_cut"]
    else:
        assert results["autograd_saved_count"]["inductor"] < count["default"]
    assert results["autograd_saved_count"]["eager"] >= count["min_cut"]
    # The default partitioner keeps the original forward's ops in forward: the joint graph's first ops,
    # up to the loss; every later op runs in backward, some of those marked fw among them.
    default = results["default_partition"]
    forward_ops = results["default_ops"]["forward"]
    assert default["forward"] == len(forward_ops) and forward_ops == results["joint_ops"][:len(forward_ops)]
    assert forward_ops[-1] == "mean" and "mean" not in results["joint_ops"][len(forward_ops):]
    assert default["fw_in_backward"] == default["joint_fw"] - default["forward"] > 0
    assert default["joint_fw"] == record.section("joint").count("fw  ")
    assert f"default  saves {count['default']} tensors" in record.section("partitioners")
    assert f"forward {default['forward']} ops" in record.section("partitioners")
    # Min-cut keeps the ReLU's mask (one byte a value), not its fp32 output.
    mask = results["min_cut_mask"]
    assert mask["dtype"] == "bool" and mask["shape"] == [64, 128] and mask["bytes"] == 64 * 128
    assert "relu" in [s["name"] for s in results["saved"]["default"]]
    assert "relu" not in [s["name"] for s in results["saved"]["min_cut"]]
    assert results["op_count"]["dynamo_graphs"] == 2
    partitioners = record.section("partitioners")
    assert f"min-cut  saves {count['min_cut']} tensors" in partitioners
    # The compiled steps compute what eager computes.
    assert results["weights_match"] == {"default": True, "min_cut": True}
    assert results["loss"]["compiled"] == pytest.approx(results["loss"]["eager"], rel=1e-5)
