"""The check of snippets/optimizations/buffer_reuse.py: what optimizations.md says about it, held on every record
of it."""

import re

from facts import check


@check("optimizations/buffer_reuse.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    code = results["code"]

    # Every named intermediate lives until eager returns; compiled code frees and reuses.
    peak = results["peak"]
    assert round(peak["eager_tensors"]) == 7, peak
    assert peak["compiled_tensors"] < peak["eager_tensors"]
    assert code["reuse_count"] >= 1
    assert re.search(r"buf\d+ = buf\d+; del buf\d+  # reuse", record.section("code"))
    assert code["full_size_allocations"] < code["eager_tensors_allocated"] == 7

    if record.device == "cpu":
        # The page's walk through the CPU record: the returned buffer takes over the
        # memory of the buffer the matmul read.
        assert code["returned_reuses"] == code["matmul_input"], code
        assert code["reuse_line"] == (f"{code['returned']} = {code['returned_reuses']}; "
                                      f"del {code['returned_reuses']}  # reuse")
        assert code["small_allocations"] == 2  # the softmaxes' row maximum and sum

    # The inputs belong to the caller: never overwritten, whatever the sources say.
    assert code["inputs_reused"] == []
    assert all(old.startswith("buf") for old in code["reuses"].values())
    assert "inputs whose memory it reuses: none" in record.section("code")
