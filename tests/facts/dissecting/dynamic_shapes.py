"""The check of snippets/dissecting/dynamic_shapes.py: what dissecting/dynamic-shapes.md says about it, held on
every record of it."""

import re

from facts import MIN_TIMINGS, as_printed, check


@check("dissecting/dynamic_shapes.py")
def _(record):
    results = record.results
    shapes = ["(8, 16)", "(12, 16)", "(20, 16)", "(20, 32)", "(1, 16)"]
    # dynamic=False: every new size is a new graph.
    assert results["static"]["after"] == dict(zip(shapes, [1, 2, 3, 4, 5]))
    assert all("SymInt" not in d for d in results["static"]["described"])
    # The default: the first change of a size recompiles with that size dynamic, and the graph is
    # reused for later sizes; a size of 1 is specialised.
    automatic = results["automatic"]
    assert automatic["after"] == dict(zip(shapes, [1, 2, 2, 3, 4]))
    first, second, third, fourth = automatic["described"]
    assert "SymInt" not in first and "softmax * 8" in first
    assert "s0: SymInt" in second and "Tensor[s0, 16]" in second and "softmax * s0" in second
    assert "Tensor[s0, s1]" in third and "Tensor[1, s1]" in fourth
    section = record.section("automatic")
    assert "failed: tensor 'x' size mismatch at index 0. expected 8, actual 12" in section
    assert "failed: 2 <= x.size()[0]" in section
    # dynamic=True: one graph for every size but 1, with symbolic sizes in it.
    dynamic = results["dynamic_true"]
    assert dynamic["after"] == dict(zip(shapes, [1, 1, 1, 1, 2]))
    assert dynamic["symbolic_in_graph"] is True and "Tensor[s0, s1]" in dynamic["described"][0]
    # mark_dynamic: dimension 0 symbolic from the first compile, dimension 1 still static.
    marked = results["mark_dynamic"]
    assert marked["after"] == dict(zip(shapes[:4], [1, 1, 1, 2]))
    assert "Tensor[s0, 16]" in marked["described"][0]
    # Guards: exact sizes for the static graph; None and range guards for the dynamic one.
    guards = results["guards"]
    assert any("size=[8, 16]" in g for g in guards["static"])
    assert any("size=[None, None]" in g for g in guards["dynamic"])
    assert any(re.fullmatch(r"2 <= L\['x'\]\.size\(\)\[0\]", g) for g in guards["dynamic"])
    # The cost of calls, timed by the site's method; which is faster is a number, not a fact.
    assert results["cost"]["agree"] is True
    for name in ("static", "dynamic"):
        timing = results["timing"][name]
        assert timing["n"] >= MIN_TIMINGS and timing["median_us"] > 0
        assert f"n={as_printed(timing)[1]}" in record.section("cost")
