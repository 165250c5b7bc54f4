"""The check of snippets/dissecting/tile_order.py: what dissecting/tile-order.md says about it, held on every record
of it."""

from facts import check


@check("dissecting/tile_order.py")
def _(record):
    results = record.results
    # Both orders compute the same product (fp32 accumulation of a 64-long sum: a rounding's worth apart).
    assert set(results["same"]["max_error"]) == {"1", "2"}
    assert all(error < 1e-4 for error in results["same"]["max_error"].values()), results["same"]
    wave = results["wave"]
    tiles, group, sms = wave["tiles"], wave["group"], wave["sms"]
    assert tiles == 64 and group == 8 and sms == 132 and wave["block_mib"] == 2
    # Each order is a permutation: every tile is computed, by exactly one program.
    for name, grid in results["order"].items():
        assert sorted(pid for row in grid for pid in row) == list(range(tiles * tiles)), name
    row_major, grouped = results["order"]["row_major"], results["order"]["grouped"]
    # Row-major: program p takes tile (p // 64, p % 64). Grouped: down 8 rows, then one column right.
    assert all(row_major[m][n] == m * tiles + n for m in range(tiles) for n in range(tiles))
    assert [grouped[m][0] for m in range(group)] == list(range(group))
    assert [grouped[0][n] for n in range(3)] == [0, group, 2 * group]
    assert grouped[group][0] == group * tiles  # the second group of rows starts after the first
    # The first wave of 132 programs: 3 rows of A and all 64 columns of B, against 8 rows and 17 columns.
    assert (wave["row_major"]["rows_of_a"], wave["row_major"]["cols_of_b"]) == (3, 64)
    assert (wave["grouped"]["rows_of_a"], wave["grouped"]["cols_of_b"]) == (8, 17)
    assert wave["ratio"] > 2.5 and wave["grouped"]["mib"] == 50
    # tile-order.md, against the H100's published 50 MB of L2: the grouped wave's working set is about its size,
    # the row-major wave's more than twice it.
    l2_mib = 50e6 / 2**20
    assert 0.9 < wave["grouped"]["mib"] / l2_mib < 1.1 and wave["row_major"]["mib"] > 2 * l2_mib
    assert "row-major order reads 2.7x the bytes" in record.section("wave")
