"""The check of snippets/dissecting/dynamo_bytecode.py: what dissecting/bytecode.md says about it, held on every
record of it."""

from facts import check

from scripts.records import SNIPPETS
from scripts.runner import section_lines


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
    # The page reads "the three lines" of sin_then_relu, the print the one in the middle.
    source = (SNIPPETS / "dissecting/dynamo_bytecode.py").read_text()
    first, last = section_lines(source)["function"]
    body = source.splitlines()[first:last]  # the lines after the def
    assert len(body) == 3 and "print(" in body[1], body
    assert results["rewritten_instructions"] > len(results["rewritten_shown"].splitlines())
    listing = record.file("rewritten.dis.txt").read_text()
    assert "__resume_at_" in listing
    # The pre-graph markers: called on every call before 2.15; from 2.15 only while a profiler runs.
    assert "record_pregraph_bytecode_enter" in listing
    assert ("_is_profiler_enabled" in listing) == record.made_with((2, 15))
    # The nested-break arguments are in the signature even where, as here, nothing nests.
    assert list(resume["arguments"][:2]) == ["__nested_resume_fns", "__nested_frame_values"]
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
