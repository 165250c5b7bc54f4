"""The check of snippets/dissecting/tlparse_report.py: what dissecting/tlparse.md says about it, held on every
record of it."""

import re

from facts import check


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
    # A symbolic size is named after a hash of its source, so the same in every run: s17 here.
    assert "x: [s17]" in record.section("summary")
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
