"""The check of snippets/dissecting/autograd_graphs.py: what dissecting/graphs.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/autograd_graphs.py")
def _(record):
    results = record.results
    default, min_cut = results["default"], results["min_cut"]
    # The forward graph is mul then sin, and with the default partitioner (what a custom backend
    # gets from aot_module_simplified) it saves x, y and the product for backward.
    assert default["forward_ops"] == ["aten.mul.Tensor", "aten.sin.default"]
    assert default["saved_for_backward"] == ["primals_1", "primals_2", "mul"]
    forward = record.section("forward")
    assert "torch.ops.aten.sin.default(mul)" in forward
    assert "return (sin, primals_1, primals_2, mul)" in forward
    # The backward graph is the chain rule: cos of the saved product, then three products.
    assert default["backward_ops"] == ["aten.cos.default"] + ["aten.mul.Tensor"] * 3
    backward = record.section("backward")
    assert "torch.ops.aten.cos.default(mul)" in backward and "tangents_1" in backward
    assert results["grads_match"] is True
    assert "cos(x*y)*x: True" in record.section("check")
    # Inductor's min-cut partitioner saves only x and y and recomputes the product in backward.
    assert min_cut["saved_for_backward"] == ["primals_1", "primals_2"]
    assert min_cut["backward_ops"] == ["aten.mul.Tensor", "aten.cos.default"] + ["aten.mul.Tensor"] * 3
    assert "return (sin, primals_1, primals_2)\n" in record.section("min_cut")
    # Counted by autograd's saved-tensor hooks: 3 with the default partitioner (as in eager), 2 with
    # the min-cut one and with Inductor itself.
    assert results["saved"]["default_partition"] == ["x", "y", "a new (8,) tensor"]
    assert results["saved"]["min_cut_partition"] == ["x", "y"]
    assert results["saved"]["inductor"] == ["x", "y"]
    assert results["saved_count"] == {"default_partition": 3, "min_cut_partition": 2, "inductor": 2, "eager": 3}
    saved = record.section("saved")
    assert "default_partition  saves 3" in saved and "inductor           saves 2: x, y" in saved
    # The graphs the page draws were kept.
    for key, op in [("forward", "aten.sin"), ("backward", "aten.cos"), ("min_cut_backward", "aten.cos")]:
        assert op in record.file(results[f"{key}_graph"]["fxgraph"]).read_text()
