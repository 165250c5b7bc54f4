"""The check of snippets/optimizations/relayout.py: what optimizations.md says about it, held on every record of
it."""

from facts import check, timed


@check("optimizations/relayout.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    assert results["conv_count"] == 3
    assert results["kept_conv_layouts"] == ["NCHW (as given)"]
    if record.device == "cpu":
        # With oneDNN, Inductor always stores a conv network's activations channels-last.
        assert results["conv_output_layouts"] == ["channels-last"] * 3
        assert "channels-last    convolution output" in record.section("strides")
    else:
        # On CUDA a heuristic decides; the page quotes how many it made channels-last.
        assert results["channels_last_conv_outputs"] in range(4)

    # The caller gets the layout eager mode returns: contiguous NCHW.
    strides = results["output_strides"]
    assert strides == sorted(strides, reverse=True) and strides[-1] == 1, strides
    timed(results["timing"], ("eager", "relayout", "kept"))
