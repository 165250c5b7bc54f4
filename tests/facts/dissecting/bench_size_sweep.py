"""The check of snippets/dissecting/bench_size_sweep.py: what dissecting/benchmarking.md says about it, held on
every record of it."""

import re

from facts import as_printed, assert_timing, check


def sweep_rows(text):
    number = r"([\d,.]+)"
    row = re.compile(rf"^\s*(\d+)\s+{number} \(\s*{number}\)\s+{number} \(\s*{number}\)"
                     rf"\s+([\d.]+)x\s+(\d+)$", re.MULTILINE)
    return [[float(v.replace(",", "")) for v in match] for match in row.findall(text)]


@check("dissecting/bench_size_sweep.py")
def _(record):
    results = record.results
    sizes = [64, 128, 256, 512, 1024] + ([2048, 4096] if record.device == "cuda" else [])
    assert results["sizes"] == sizes
    eager, compiled = results["timing"]["eager"], results["timing"]["compiled"]
    assert len(eager) == len(compiled) == len(sizes)
    for timing in eager + compiled:
        assert_timing(timing)
    # The printed table is the recorded data.
    rows = sweep_rows(record.section("sweep"))
    assert [int(r[0]) for r in rows] == sizes
    for row, e, c in zip(rows, eager, compiled):
        (e_us, e_n), (c_us, c_n) = as_printed(e), as_printed(c)
        assert abs(row[1] - e_us) <= 0.05 + 1e-6 * e_us
        assert abs(row[3] - c_us) <= 0.05 + 1e-6 * c_us
        assert abs(row[5] - e_us / c_us) <= 0.005
        assert int(row[6]) == min(e_n, c_n)
    assert results["smallest"]["n"] == sizes[0]
