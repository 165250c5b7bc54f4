"""Facts of the deeper Dissecting pages: Dynamo at the bytecode level, dynamic shapes, and a
tlparse compile report."""

import re

from facts import MIN_TIMINGS, as_printed, check


@check("dissecting/dynamo_bytecode.py")
def _(record):
    results = record.results
    assert results["matches"] is True
    # Two frames compiled: the function up to the break, then the resume function Dynamo made for
    # the code after it.
    first, resume_frame = results["frames"]
    assert first == "sin_then_relu"
    assert resume_frame.startswith("torch_dynamo_resume_in_sin_then_relu_at_")
    resume = results["resume"]
    assert resume["global"].startswith("__resume_at_") and resume["name"] == resume_frame
    assert resume["compiled_frame"] == resume_frame and resume["calls_compiled_graph"] is True
    assert resume["offset"] > 0 and f"{resume['offset']:>4} {resume['resumes_at']}" in results["original"]
    assert "y" in resume["arguments"]  # the live local it needs, passed in by the rewritten code
    # The rewritten bytecode calls the compiled graph, runs the print, and calls the resume function.
    assert results["rewritten_names"] == {"compiled_fn": True, "resume": True, "print": True}
    rewritten = record.section("rewritten")
    assert "__compiled_fn_" in rewritten and "__resume_at_" in rewritten
    assert "0x" not in rewritten and "0x" not in record.section("original")
    assert "'graph break: Python runs this line'" in record.section("original")
    assert results["rewritten_instructions"] > len(results["rewritten_shown"].splitlines())
    assert "__resume_at_" in record.file("rewritten.dis.txt").read_text()
    assert "JUMP" in record.section("resume")  # the prologue jumps to where the break was
    if results["depyf"]["available"]:
        decompiled = record.section("depyf")
        assert "def sin_then_relu(x):" in decompiled and "__resume_at_" in decompiled
        assert f"def {resume_frame}(" in decompiled
    else:
        assert "depyf is not installed" in record.section("depyf")
    # fullgraph=True turns the break into an error.
    assert results["fullgraph"]["raised"] is True and results["fullgraph"]["error"] == "Unsupported"
    assert record.section("fullgraph").startswith("Unsupported: ")
    # torch.compiler.disable: the call is a graph break, and the function runs eagerly.
    disable = results["disable"]
    assert disable["graphs"] == 2 and disable["breaks"] == 1 and disable["matches"] is True
    assert "torch.compiler.disable" in disable["reason"]
    assert "compiling=False" in record.section("disable")


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


@check("dissecting/tlparse_report.py")
def _(record):
    results = record.results
    # Two compiles of the six-op activation: the first, then a recompile for the new size.
    assert [c["compile_id"] for c in results["compiles"]] == ["0/0", "0/1"]
    assert all(c["graph_op_count"] == 6 and c["co_name"] == "complex_activation"
               for c in results["compiles"])
    first, second = results["compiles"]
    assert first["shape_env_guard_count"] == 0 and second["shape_env_guard_count"] >= 1
    assert results["events"]["dynamo_output_graph"] == 2
    assert results["events"]["inductor_output_code"] == 2
    assert len(results["recompile_reasons"]) == 1
    assert "size mismatch at index 0" in results["recompile_reasons"][0]
    assert "x: [s0]" in record.section("summary")
    tlparse = results["tlparse"]
    if tlparse["available"]:
        assert tlparse["compile_ids"] == ["[0/0]", "[0/1]"] and "index.html" in tlparse["pages"]
        for products in tlparse["products"].values():
            assert any(p.startswith("dynamo_output_graph") for p in products)
            assert any(p.startswith("inductor_output_code") for p in products)
        page = record.file(tlparse["report"]).read_text()
        assert "[0/0]" in page and "[0/1]" in page and "Build products" in page
        # One self-contained page: no link to another file, no folder of the recording machine.
        assert not re.findall(r"""href=["'](?!#|https?:)""", page)
        assert not re.search(r"<(repo|tmp|user|host)>", page)
        assert "[0/1]: " in record.section("tlparse")
    else:
        assert tlparse["skipped"] and "tlparse is not installed" in record.section("tlparse")
