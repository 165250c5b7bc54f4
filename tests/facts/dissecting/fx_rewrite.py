"""The check of snippets/dissecting/fx_rewrite.py: what dissecting/graphs.md says about it, held on every record
of it."""

import re

from facts import check


@check("dissecting/fx_rewrite.py")
def _(record):
    results = record.results
    ops = [node["op"] for node in results["nodes"]]
    assert ops == ["placeholder", "call_module", "call_function", "call_method", "call_function", "output"]
    graph = record.section("module")
    assert "call_function[target=torch.relu]" in graph and "call_method[target=mean]" in graph
    table = record.section("table")
    assert table.splitlines()[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert re.search(r"^call_function\s+relu\s+torch\.relu\s", table, re.MULTILINE)
    assert "0x" not in table  # qualified names, not reprs with addresses
    assert results["swapped"] == 1
    code = record.section("rewrite")
    assert "gelu" in code and "relu" not in code
    assert results["new_matches"] is True and results["old_differs"] is True
    traced = record.file(results["traced_graph"]["fxgraph"]).read_text()
    rewritten = record.file(results["rewritten_graph"]["fxgraph"]).read_text()
    assert "torch.relu" in traced and "gelu" in rewritten and "relu" not in rewritten
