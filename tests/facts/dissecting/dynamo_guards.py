"""The check of snippets/dissecting/dynamo_guards.py: what dissecting/dynamo.md says about it, held on every
record of it."""

from facts import check

from scripts.records import SNIPPETS
from scripts.runner import section_lines


def section_source(snippet: str, name: str) -> str:
    """The source lines of a snippet's section, as the page includes them."""
    lines = (SNIPPETS / snippet).read_text().splitlines()
    first, last = section_lines("\n".join(lines))[name]
    return "\n".join(lines[first - 1:last]) + "\n"


@check("dissecting/dynamo_guards.py")
def _(record):
    results = record.results
    # The page shows the guards of the function the backend printed: the snippet measured the function its
    # shown section holds, the same source as dynamo_backend.py's shown function.
    assert results["function_source"] == section_source("dissecting/dynamo_guards.py", "function")
    assert results["function_source"] == section_source("dissecting/dynamo_backend.py", "function")
    assert len(results["function_source"].splitlines()) == 1 + 3  # the page's "three-line function"
    guards = record.section("guards")
    assert guards.count("TENSOR_MATCH: check_tensor(") == 2
    assert "size=[8]" in guards and "torch.float32" in guards
    kinds = results["guard_kinds"]
    assert kinds["TENSOR_MATCH"] == 2 and kinds["GLOBAL_STATE"] == 1
    assert results["guard_count"] == sum(kinds.values())
    assert f"{results['guard_count']} checks in all: " in guards
    assert " # " not in guards and "0x" not in guards  # normalised: no source comments, no addresses
    # The globals it read are checked by identity: torch and torch.abs, and the built-ins the folded constant
    # came from (sum, range), with the polyfills Dynamo traced sum through.
    checked = results["identity_checked"]
    assert kinds["ID_MATCH"] == len(checked)
    assert {"G['torch']", "G['torch'].abs"} <= set(checked)
    assert any(c.endswith("['sum']") for c in checked) and any(c.endswith("['range']") for c in checked)
    assert any("polyfills" in c for c in checked)
    # One guard per mark a tensor may carry (mark_dynamic, maybe_mark_dynamic, mark_unbacked, strict
    # unbacked, mark_static), on each of the two inputs; before 2.13 one NO_HASATTR on the first mark.
    marks = [g for g in results["guards_of_a"] if g.startswith(("DIMENSION_DYNAMIC_MARKING_GUARD", "NO_HASATTR"))]
    if record.made_with((2, 13)):
        assert kinds["DIMENSION_DYNAMIC_MARKING_GUARD"] == 10 and len(marks) == 5
        for mark in ("dynamic", "weak_dynamic", "unbacked", "strict_unbacked", "static"):
            assert any(f"'_dynamo_{mark}_indices') == False" in g for g in marks), mark
    else:
        assert kinds["NO_HASATTR"] == 2 and marks == ["NO_HASATTR: hasattr(L['a'], '_dynamo_dynamic_indices') == False"]
    rows = results["recompiles"]
    keys = ("first", "new_values", "dtype", "shape", "requires_grad", "again")
    assert len(rows) == 6 and set(rows) == set(keys)  # the page's "six calls"
    assert [rows[key]["graphs"] for key in keys] == [1, 1, 2, 3, 4, 4]
    assert "dtype mismatch" in rows["dtype"]["reason"]
    assert "size mismatch" in rows["shape"]["reason"]
    assert "requires_grad mismatch" in rows["requires_grad"]["reason"]
    assert results["automatic_dynamic"] == {"8": 1, "16": 2, "32": 2, "64": 2}
    assert isinstance(results["recompile_limit"], int) and results["recompile_limit"] >= 4
    # dynamo.md: on a GPU each TENSOR_MATCH names the CUDA dispatch keys and device 0; the tree is the same.
    if record.device == "cuda":
        assert guards.count("DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, AutogradCUDA)") == 2
        assert guards.count("device=0,") == 2
        assert "DispatchKeySet(CPU" not in guards
