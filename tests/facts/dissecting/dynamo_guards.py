"""The check of snippets/dissecting/dynamo_guards.py: what dissecting/dynamo.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/dynamo_guards.py")
def _(record):
    results = record.results
    guards = record.section("guards")
    assert guards.count("TENSOR_MATCH: check_tensor(") == 2
    assert "size=[8]" in guards and "torch.float32" in guards
    assert results["guard_kinds"]["TENSOR_MATCH"] == 2
    assert results["guard_count"] == sum(results["guard_kinds"].values())
    assert " # " not in guards and "0x" not in guards  # normalised: no source comments, no addresses
    rows = results["recompiles"]
    keys = ("first", "new_values", "dtype", "shape", "requires_grad", "again")
    assert [rows[key]["graphs"] for key in keys] == [1, 1, 2, 3, 4, 4]
    assert "dtype mismatch" in rows["dtype"]["reason"]
    assert "size mismatch" in rows["shape"]["reason"]
    assert "requires_grad mismatch" in rows["requires_grad"]["reason"]
    assert results["automatic_dynamic"] == {"8": 1, "16": 2, "32": 2, "64": 2}
    assert isinstance(results["recompile_limit"], int) and results["recompile_limit"] >= 4
