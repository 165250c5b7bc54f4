"""The check of snippets/dissecting/fusion_scores.py: what dissecting/fusion-scores.md says about it, held on every
record of it. The page reads the CPU's rounds (the C++ backend) and the GPU's (the Triton backend) apart: they
differ in what reaches the scheduler and in the priority classes."""

from facts import check


def pairs(found, key):
    return [tuple(item["pair"] if isinstance(item, dict) else item[:2]) for r in found for item in r[key]]


@check("dissecting/fusion_scores.py")
def _(record):
    results = record.results
    examples = results["examples"]
    tensor, rows = results["tensor_bytes"], results["rows"]
    row_result = rows * 4  # one float32 per row: a max, a sum

    # Lowering inlined the six element-wise ops into one loop: the scheduler has one node and nothing to fuse.
    activation = examples["complex_activation"]
    assert len(activation["nodes"]) == 1 and len(activation["kernels"]) == 1, activation["nodes"]
    assert not pairs(activation["rounds"], "candidates")
    assert set(activation["nodes"][0].split("+")) == {"sin", "cos", "mul", "add", "mul_1", "relu"}
    assert len(activation["nodes"][0].split("+")) == 6  # the six ops, in one node

    for name, found in examples.items():
        for r in found["rounds"]:
            # A round's candidates are sorted best first, and the first of them is fused.
            if r["candidates"]:
                assert r["fused"] and r["fused"][0] == r["candidates"][0]["pair"], (name, r)
            # Every candidate is a legal pair of the best priority class.
            if r["legal"]:
                best = min(p["priority"] for p in r["legal"])
                kept = [tuple(p["pair"]) for p in r["legal"] if p["priority"] == best]
                assert set(pairs([r], "candidates")) <= set(kept), (name, r)

    # Softmax ends in one kernel on every device.
    softmax = examples["softmax"]
    assert len(softmax["kernels"]) == 1
    fused = pairs(softmax["rounds"], "fused")
    first = softmax["rounds"][0]

    # Two reductions of the same rows fuse though neither reads the other: they share the read of x.
    stats = examples["row_stats"]
    assert pairs(stats["rounds"], "fused")[0] == ("sum_1", "amax")
    assert stats["rounds"][0]["candidates"][0]["shared_bytes"] == tensor
    assert len(stats["kernels"]) == 1

    # Reductions across each other read x in different orders: no shared access, no fusion.
    across = examples["row_and_column_sums"]
    assert not pairs(across["rounds"], "fused")
    assert pairs(across["rounds"], "refused")
    assert all(why == "no shared data" for r in across["rounds"] for *_, why in r["refused"])

    if record.device == "cpu":
        # Softmax: four buffers reach the scheduler, and all four end in one kernel.
        assert softmax["nodes"] == ["amax", "exp+sub", "sum_1", "div"], softmax["nodes"]
        assert len(softmax["nodes"]) == 4  # four buffers reach the scheduler
        # The first fusion is exp(x - max) with its sum: they share the exponentials, a tensor's worth of bytes.
        assert fused[0] == ("exp+sub", "sum_1")
        assert first["candidates"][0]["shared_bytes"] == tensor
        later = [c for r in softmax["rounds"][1:] for c in r["candidates"]]
        # Then the max joins (they share x and the row maxima) and the division (the exponentials and the sums).
        assert {c["shared_bytes"] for c in later} == {tensor + row_result}, later
        assert ("amax", "exp+sub+sum_1") in fused and fused[-1][1] == "div"
        # With the bytes equal, the pair of two reductions (the max's) is scored first.
        second = softmax["rounds"][1]["candidates"]
        assert [c["pair"][0] for c in second] == ["amax", "exp+sub+sum_1"], second
        assert [int(c["score"]["node_type_score"]) for c in second] == [1, 0], second
        # The C++ backend ranks a reduction feeding a loop over the same rows below other pairs: a round
        # keeps the best class, so the max waits for round 2.
        legal = {tuple(p["pair"]): p["priority"] for p in first["legal"]}
        assert legal[("amax", "exp+sub")] > legal[("exp+sub", "sum_1")], legal
        assert ("exp+sub", "div", "intermediate nodes between node1 & node2") in map(tuple, first["refused"])
        # row_stats: the add joins in round 2 and shares only the two row results.
        assert stats["rounds"][1]["candidates"][0]["shared_bytes"] == 2 * row_result
        # Two nodes, two kernels: x is read twice.
        assert across["nodes"] == ["sum_1", "sum_2"] and len(across["kernels"]) == 2

    if record.device == "cuda":
        # Every legal pair is in one priority class (the Triton backend keeps the base class's 0), so each
        # function is decided in a single round with candidates.
        for name, found in examples.items():
            assert {p["priority"] for r in found["rounds"] for p in r["legal"]} <= {0}, name
            assert sum(bool(r["candidates"]) for r in found["rounds"]) <= 1, name
        # Softmax reaches the scheduler as Inductor's online softmax: the max and the sum are the two outputs
        # of one reduction (two nodes), and exp(x - max) / sum is one loop. Three nodes, one kernel.
        assert softmax["nodes"] == ["prepare_softmax_online_default"] * 2 + ["div+exp_default+sub_tensor"]
        assert len(softmax["nodes"]) == 3
        # The max and the sum share the read of x; the division then joins, sharing x and a row result.
        assert fused[0] == ("prepare_softmax_online_default", "prepare_softmax_online_default")
        assert first["candidates"][0]["shared_bytes"] == tensor
        assert {c["shared_bytes"] for c in first["candidates"][1:]} == {tensor + row_result}, first
        assert fused[-1][1] == "div+exp_default+sub_tensor" and len(fused) == 2
        # The column sum is split in two (partial sums, then their sum): three nodes, three kernels.
        assert across["nodes"] == ["sum_1", "sum_2", "sum_2"] and len(across["kernels"]) == 3
