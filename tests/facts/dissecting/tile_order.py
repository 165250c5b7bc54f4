"""The check of snippets/dissecting/tile_order.py: what dissecting/tile-order.md says about it, held on every record
of it."""

from facts import check


@check("dissecting/tile_order.py")
def _(record):
    results = record.results
    # Both orders compute the same product: the same error against torch's. On the CPU (the interpreter, fp32
    # products) a rounding's worth; on a GPU tl.dot takes fp32 inputs as TF32 (Triton's default there), so
    # the error is TF32's size, and still the same for both orders.
    errors = results["same"]["max_error"]
    assert set(errors) == {"1", "2"} and errors["1"] == errors["2"], results["same"]
    assert errors["1"] < (1e-4 if record.device == "cpu" else 1e-1), results["same"]
    if record.device == "cuda":
        assert errors["1"] > 1e-3, results["same"]  # TF32's size, not fp32's
    wave = results["wave"]
    tiles, group, sms = wave["tiles"], wave["group"], wave["sms"]
    assert tiles == 64 and group == 8 and sms == 132 and wave["block_mib"] == 2 and wave["slab_kib"] == 16
    # Each order is a permutation: every tile is computed, by exactly one program.
    for name, grid in results["order"].items():
        assert sorted(pid for row in grid for pid in row) == list(range(tiles * tiles)), name
    row_major, grouped = results["order"]["row_major"], results["order"]["grouped"]
    # Row-major: program p takes tile (p // 64, p % 64). Grouped: down 8 rows, then one column right.
    assert all(row_major[m][n] == m * tiles + n for m in range(tiles) for n in range(tiles))
    assert [grouped[m][0] for m in range(group)] == list(range(group))
    assert [grouped[0][n] for n in range(3)] == [0, group, 2 * group]
    assert grouped[group][0] == group * tiles  # the second group of rows starts after the first
    # The sm_90 build (fp16, 128 x 128 tiles, slabs of 64, 8 warps, 3 stages): an H100's wgmma keeps 3 slabs of
    # A and of B in shared memory, 96 KiB, and an SM holds 2 such programs; a wave is 264 programs.
    build = results["build"]
    assert (build["slab"], build["num_warps"], build["num_stages"]) == (64, 8, 3)
    assert build["shared_bytes"] == 3 * 2 * 128 * 64 * 2, build
    assert build["per_sm"] == 2 and "shared memory" in build["limited_by"], build
    assert wave["programs"] == sms * build["per_sm"] == wave["build"]["programs"]
    assert f"an SM holds {build['per_sm']} programs" in record.section("build")
    one, built = wave["one_per_sm"], wave["build"]
    assert one["programs"] == sms
    # One program per SM: 3 rows of A and all 64 columns of B (134 MiB), against 8 rows and 17 columns
    # (50 MiB, 52.4 MB). The build's 264: 5 rows and 64 columns (138 MiB) against 8 and 33 (82 MiB).
    assert (one["row_major"]["rows_of_a"], one["row_major"]["cols_of_b"]) == (3, 64)
    assert (one["grouped"]["rows_of_a"], one["grouped"]["cols_of_b"]) == (8, 17)
    assert (built["row_major"]["rows_of_a"], built["row_major"]["cols_of_b"]) == (5, 64)
    assert (built["grouped"]["rows_of_a"], built["grouped"]["cols_of_b"]) == (8, 33)
    assert one["grouped"]["mib"] == 50 and round(one["grouped"]["mb"], 1) == 52.4
    assert wave["l2_mib"] == 50 and round(wave["l2_mb"], 1) == 52.4
    for w in (one, built):
        for name in ("row_major", "grouped"):
            o = w[name]
            assert o["mib"] == (o["rows_of_a"] + o["cols_of_b"]) * wave["block_mib"]
            # Only the current slab of each row and column is live: about 1 MiB at most, far below the L2.
            assert o["live_kib"] == (o["rows_of_a"] + o["cols_of_b"]) * wave["slab_kib"] < 0.03 * wave["l2_mib"] * 1024
            assert o["memory_bound"] == (o["dram_us"] > w["compute_us"])
        assert w["ratio"] == w["row_major"]["mib"] / w["grouped"]["mib"] > 1
    # tile-order.md: with one program per SM the row-major wave waits for DRAM and the grouped one does not;
    # with the build's two per SM, both fit under the arithmetic.
    assert one["row_major"]["memory_bound"] and not one["grouped"]["memory_bound"]
    assert not built["row_major"]["memory_bound"] and not built["grouped"]["memory_bound"]
    section = record.section("wave")
    assert "264 programs a wave (2 per SM)" in section and "132 programs a wave (1 per SM)" in section
