"""The check of snippets/graph_mode/recompiles.py: what graph-mode.md says about it, held on every record of it."""

import re

from facts import check


@check("graph_mode/recompiles.py")
def _(record):
    counts = record.results["counts"]
    assert counts["None"]["compiles"] == 2  # static first, then one dynamic graph for every other batch
    # when-to-compile.md: "compiles for five calls", the five batches each setting is called with
    called = re.search(r"compile\(s\) for batches \[([\d, ]+)\]", record.stdout)
    assert called and len(called.group(1).split(",")) == 5, record.stdout
    assert counts["False"]["compiles"] == 4  # one per distinct batch size
    assert counts["True"]["compiles"] == 1
    assert counts["None"]["recompile_reasons"] == ["tensor 'x' size mismatch at index 0. expected 8, actual 16"]
    assert len(counts["False"]["recompile_reasons"]) == 3
    # Batch 1 is specialised apart: 8 static, 16 dynamic, 1 a third graph, static again.
    batch_one = record.results["batch_one"]
    assert batch_one["compiles"] == 3
    assert batch_one["last_inputs"][0] == [1, 256]
    limit = record.results["limit"]
    assert limit["sizes"] > limit["recompile_limit"]
    assert limit["compiles"] == limit["recompile_limit"]  # then Dynamo runs the function eagerly
    assert f"recompile limit: {limit['recompile_limit']}" in record.section("limit")
    assert all(r["matches_eager"] for r in record.results["inductor"].values())
