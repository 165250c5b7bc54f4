"""The check of snippets/dissecting/triton_basics.py: what dissecting/triton-basics.md says about it, held on
every record of it."""

from facts import check


@check("dissecting/triton_basics.py")
def _(record):
    results = record.results
    if record.device == "cpu":
        assert results["ran"] == "Triton's interpreter on the CPU"
        assert "without a GPU; never run" in results["label"]
    # The kernels, run on a GPU or in the interpreter, match torch.
    assert results["add"]["programs"] == 97 and results["add"]["max_error"] <= 1e-6
    assert results["who"] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert results["softmax"]["block_size"] == 1024
    assert results["softmax"]["max_error"] < 1e-5 and results["persistent"]["max_error"] < 1e-5
    assert "max error against torch" in record.section("add_run")
    # num_warps: the TTGIR carries the number asked for, and the layout spreads 1024 values over
    # 32 * num_warps threads.
    warps = results["warps"]
    assert sorted(map(int, warps)) == [1, 4, 8, 16]  # one, four, eight and 16 warps
    for asked, w in warps.items():
        asked = int(asked)
        assert w["ttgir_num_warps"] == asked and w["warps_per_cta"] == asked
        assert w["values_per_thread"] * 32 * asked == 1024
        assert 0 < w["registers"] <= 255
        text = record.file(f"softmax.sm_90.num_warps_{asked}.ttgir").read_text()
        assert f'"ttg.num-warps" = {asked}' in text
    # num_stages: a pipelined loop holds more rows in shared memory with each stage.
    stages = results["stages"]
    assert sorted(map(int, stages)) == [1, 2, 3, 4]  # one to four stages
    assert stages["1"]["async_copies"] == 0 and all(stages[s]["async_copies"] > 0 for s in ("2", "3", "4"))
    shared = [stages[s]["shared_bytes"] for s in ("1", "2", "3", "4")]
    assert shared == sorted(shared) and shared[0] < shared[-1]
    three = record.file("softmax_persistent.sm_90.num_stages_3.ttgir").read_text()
    assert "ttg.async_copy_global_to_local" in three
    # The softmax copies each row from shared memory into registers before using it: S - 1 row buffers for S
    # stages (two rows, memdesc<2x1024x...>, with three stages).
    assert "ttg.local_alloc : () -> !ttg.memdesc<2x1024x" in three and "ttg.local_load" in three
    # A loop of tl.dot keeps S - 1 buffers of each operand on an A100 (mma.sync reads registers, which
    # ttg.local_load fills first) and S on an H100 and a B200 (wgmma and tcgen05 read shared memory while they
    # run).
    dot = results["dot_stages"]
    assert set(dot) == {"sm_80", "sm_90", "sm_100"}
    for target, gpu, minus, reads in (("sm_80", "A100", 1, "registers (mma.sync)"),
                                      ("sm_90", "H100", 0, "shared memory (wgmma)"),
                                      ("sm_100", "B200", 0, "shared memory (tcgen05)")):
        assert sorted(map(int, dot[target])) == [2, 3, 4]  # two, three and four stages
        for stages_asked, d in dot[target].items():
            assert d["buffers"] == int(stages_asked) - minus and d["reads"] == reads, (target, stages_asked, d)
            # Each buffer of A and of B is a 128 x 64 fp16 slab, 16 KiB: 32 KiB a pair (sm_100 adds its
            # barriers, a few bytes).
            pairs = d["buffers"] * 2 * 128 * 64 * 2
            assert pairs <= d["shared_bytes"] < pairs + 1024, (target, stages_asked, d)
        assert f"{target} ({gpu}): tl.dot reads its operands from {reads}" in record.section("dot_stages")
    assert "never run" in record.section("warps")
    # What fits on one SM (a model from the H100's published limits): one warp per program is capped by the
    # 32 programs an SM holds, at half its warps; four warps or more fill all 64 slots, the thread limit
    # binding. Three stages need more registers than one. With torch 2.15's Triton 3.9 that crosses a step of
    # the per-warp allocation of 256, yet the registers bind only as tightly as the threads and every build
    # fills the SM; with torch 2.13's Triton 3.7 the registers, not the shared memory, cut the three-stage
    # build's programs below one stage's. (Torch 2.11's Triton 3.6 stays within one step; the page says
    # nothing of it.)
    occupancy = results["occupancy"]
    one = occupancy["num_warps_1"]
    assert one["limited_by"] == "programs" and one["programs"] == 32 and one["occupancy"] == 0.5, one
    for asked in ("4", "8", "16"):
        o = occupancy[f"num_warps_{asked}"]
        assert "threads" in o["limited_by"] and o["occupancy"] == 1.0, (asked, o)
    step = {s: -(-stages[s]["registers"] * 32 // 256) for s in ("1", "3")}  # allocation steps per warp
    assert stages["3"]["registers"] > stages["1"]["registers"], stages
    three = occupancy["num_stages_3"]
    if record.made_with((2, 15)):
        assert step["3"] > step["1"], stages
        assert three["limited_by"] == "registers and threads", three
        assert all(o["occupancy"] == 1.0 for name, o in occupancy.items() if name.startswith("num_stages")), occupancy
    elif record.made_with((2, 13)):
        assert step["3"] > step["1"], stages
        assert three["limited_by"] == "registers", three
        assert three["programs"] < occupancy["num_stages_1"]["programs"], occupancy
    for name, o in occupancy.items():
        assert o["warps"] == o["programs"] * (4 if name.startswith("num_stages") else int(name.split("_")[-1]))
