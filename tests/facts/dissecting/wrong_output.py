"""The check of snippets/dissecting/wrong_output.py: what dissecting/wrong-output.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/wrong_output.py")
def _(record):
    results = record.results
    errors, tolerance = results["errors"], results["tolerance"]
    # Dynamo and AOTAutograd alone reproduce eager exactly; the planted decomposition breaks every backend that
    # decomposes, Inductor included.
    assert errors["eager"] == errors["aot_eager"] == 0.0, errors
    assert errors["aot_eager_decomp_partition"] > tolerance and errors["inductor"] > tolerance, errors
    # The bisector names the backend, the subsystem, and SiLU's decomposition as the first bad application.
    found = results["bisect"]
    assert (found["backend"], found["subsystem"]) == ("aot_eager_decomp_partition", "decomposition"), found
    assert "aten.silu" in found["culprit"] and found["number"] >= 1, found
    assert "Disabling decomposition fixed the issue." in record.section("bisect")
    # TORCHDYNAMO_REPRO_AFTER="aot" at level 4 compares the graph the decompositions made with Inductor's code
    # of it: both hold the bad SiLU, so it raises nothing. "dynamo" means to compare the Dynamo graph with the
    # whole backend, but its check cannot call what the backend returned and skips the graph.
    checks = results["repro_after"]
    assert checks["aot"]["verdict"].startswith("no AccuracyError") and checks["aot"]["skipped"] == [], checks
    assert checks["dynamo"]["verdict"].startswith("no AccuracyError"), checks
    assert len(checks["dynamo"]["skipped"]) == 1 and checks["dynamo"]["skipped"][0].startswith("ValueError"), checks
    # A backend that runs each captured graph both ways catches it: one graph, the three ops of feed_forward.
    flagged = results["checked"]
    assert len(flagged) == 1 and flagged[0]["ops"] == 3 and flagged[0]["error"] > tolerance, flagged
    assert "torch.nn.functional.silu(" in record.section("checked")
    # With the table as torch ships it, Inductor is back within the tolerance.
    assert results["fixed_error"] < tolerance
    # The minifier cuts the ten-op block down to the SiLU alone, its input the product it followed.
    minified = results["minified"]
    assert minified["ops_before"] >= 8 and minified["ops_after"] == 1, minified
    assert "aten.silu" in minified["code"] and len(minified["inputs"]) == 1, minified
