"""The check of snippets/graph_mode/when_not_to_compile.py: what graph-mode.md says about it, held on every
record of it."""

import ast

from facts import check, timed

from scripts.records import SNIPPETS


def ops_in(function: str) -> int:
    """The arithmetic operators and calls in one function of the snippet as it is now: the ops eager runs."""
    tree = ast.parse((SNIPPETS / "graph_mode/when_not_to_compile.py").read_text())
    (found,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    return sum(isinstance(node, (ast.BinOp, ast.Call)) for node in ast.walk(found))


@check("graph_mode/when_not_to_compile.py")
def _(record):
    break_even = record.results["break_even"]
    assert break_even["compile_s"] > 0
    assert break_even["pays_off"] == (break_even["calls"] is not None)
    assert break_even["calls"] is None or break_even["calls"] >= 1
    timed(record.results["timing"], ("eager", "compiled"))
    timed(record.results["tiny"], ("eager", "compiled"))
    assert "median compiled / median eager" in record.section("tiny")
    # when-to-compile.md: eager's four ops (add, gelu, mul, add); transformer.md: tiny's two ops on eight floats.
    assert ops_in("bias_gelu_residual") == 4
    assert ops_in("tiny") == 2
