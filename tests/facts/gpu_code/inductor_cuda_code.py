"""The check of snippets/gpu_code/inductor_cuda_code.py: what dissecting/inductor.md and dissecting/triton.md say
about it, held on every record of it."""

import re

from facts import check, skip_unless_pinned

from scripts import records


@check("gpu_code/inductor_cuda_code.py")
def _(record):
    generated = record.results["inductor_cuda"]
    assert generated["label"]
    if not generated["available"]:
        assert "could not be generated" in generated["reason"]
        assert generated["reason"] in record.section("kernels")
        skip_unless_pinned(record, generated["reason"])
    if record.device == "cpu":
        assert "without a GPU; never run" in generated["label"]
    n = record.results["n"]
    act = generated["complex_activation"]
    (kernel,) = act["kernels"]  # six ops, ONE kernel
    assert kernel.startswith("triton_poi_fused_")
    assert all(op in kernel for op in ("sin", "cos", "mul", "add", "relu"))
    assert [launch.removesuffix(".run") for launch in act["launches"]] == [kernel]
    assert act["num_bytes_accessed"] == 3 * n * 4  # read x and y, write out: fp32
    assert "@triton.jit" in act["sources"][kernel] and "tl.load" in act["sources"][kernel]
    lin = generated["linear_relu"]
    (fused,) = lin["kernels"]  # extern mm + ONE fused add+relu kernel
    assert fused.startswith("triton_poi_fused_") and "add" in fused and "relu" in fused
    assert lin["launches"] == ["extern_kernels.mm", f"{fused}.run"]
    assert set(lin["bytes_per_kernel"]) == {"extern_kernels.mm", fused}
    soft = generated["matmul_softmax"]
    (reduction,) = soft["kernels"]
    assert reduction.startswith(("triton_per_fused_", "triton_red_fused_"))
    assert "softmax" in reduction
    # inductor.md: on a Triton target the max and sum become one prepare_softmax_online node (the kernel is named
    # after it), and exp is computed twice (once for the sum, once for the output). A persistent kernel (a whole
    # row in registers) computes that node in two passes, max then sum (prepare_softmax_twopass_fallback); only a
    # looped triton_red_ kernel combines them online.
    assert "online" in reduction, reduction
    assert soft["sources"][reduction].count("exp(") >= 2
    if reduction.startswith("triton_per_"):
        assert "online_softmax_combine" not in soft["sources"][reduction]
    assert soft["launches"] == ["extern_kernels.mm", f"{reduction}.run"]
    assert sum(soft["bytes_per_kernel"].values()) == soft["num_bytes_accessed"]
    assert "@triton.jit" in record.file(act["file"]).read_text()
    assert kernel in record.section("activation")
    if record.device == "cuda":
        for name in ("complex_activation", "linear_relu", "matmul_softmax"):
            assert generated[name]["max_error"] is not None
        if record.committed:
            # inductor-cuda.md: the same release wrote the same kernels, with the same byte counts, without a
            # GPU (its CPU record) as on the GPU.
            same = [r for r in records.releases_of(record.snippet, "cpu") if r.release == record.release]
            if same:
                without = same[0].results["inductor_cuda"]
                for name in ("complex_activation", "linear_relu", "matmul_softmax"):
                    assert without[name]["kernels"] == generated[name]["kernels"], name
                    assert without[name]["bytes_per_kernel"] == generated[name]["bytes_per_kernel"], name
    the_line_map(record)


def the_line_map(record):
    """inductor-cuda.md's explorer: the chain from the example's line to the kernel, and which lines of the
    generated kernel lose their instructions at which stage."""
    generated = record.results["inductor_cuda"]
    maps = record.results["maps"]
    if not maps:
        skip_unless_pinned(record, record.section("line_map").strip())
    (kernel,) = generated["complex_activation"]["kernels"]
    found = maps[kernel]
    chain = found["chain"]
    assert chain["user_code"].startswith("return torch.relu(")
    assert chain["fx_nodes"] == ["sin", "cos", "mul", "add", "mul_1", "relu"], chain["fx_nodes"]
    assert len(chain["buffers"]) == 1, chain["buffers"]  # six nodes, one fused scheduler node
    first, source = found["first_line"], found["source"]
    code = {line: source[line - first].strip() for line in found["code_lines"]}
    assert set(found["targets"]) == {"sm_80", "sm_90", "sm_100"}
    for target, mapped in found["targets"].items():
        silent = {stage: [code[line].split(" = ")[0] for line in code if line not in lines]
                  for stage, lines in mapped["sources"].items()}
        for stage, lines in mapped["sources"].items():
            assert set(lines) <= set(range(first, first + len(source))), (target, stage)
            text = record.file(f"{kernel}.{target}.{stage.replace(' ', '_')}.txt").read_text()
            assert len(text.splitlines()) == mapped["lines"][stage]
        # inductor-cuda.md: xnumel, xmask, x0 and tmp7 have no line in any stage, and tmp4's multiply has no SASS
        # of its own: it joins tmp5's add in a fused multiply-add on tmp5's line. Up to torch 2.13, tmp8 calls the
        # inlined triton_helpers.maximum, which keeps its call site down to LLVM IR and loses it from PTX on;
        # torch 2.15 writes tl.maximum, and every SASS line has a kernel line.
        for stage in ("TTIR", "TTGIR", "LLVM IR"):
            assert silent[stage] == ["xnumel", "xmask", "x0", "tmp7"], (target, stage, silent[stage])
        if record.made_with((2, 15)):
            assert code[first + source.index(next(t for t in source if "tmp8 = " in t))].startswith(
                "tmp8 = tl.maximum("), source
            assert silent["PTX"] == silent["SASS"] == ["xnumel", "xmask", "x0", "tmp4", "tmp7"], (target, silent)
            assert mapped["sass_mapped_share"] == 1, mapped["sass_mapped_share"]
        else:
            assert silent["SASS"] == ["xnumel", "xmask", "x0", "tmp4", "tmp7", "tmp8"], (target, silent["SASS"])
            assert "tmp8" in silent["PTX"] and ("tmp4" in silent["PTX"]) == (target != "sm_100"), silent["PTX"]
            assert 0.9 < mapped["sass_mapped_share"] < 1, mapped["sass_mapped_share"]
        # The map puts each inline-asm block back at its first line (see line_maps); torch 2.15's Triton is the one
        # whose .loc drifts. Its loads are then on the lines that load: x on tmp0's, y on tmp2's.
        assert mapped["asm"]["same_sass"], target
        assert (mapped["asm"]["moved"]["SASS"] > 0) == record.made_with((2, 15)), (target, mapped["asm"])
        line_of = {code[line].split(" = ")[0]: line for line in code}
        rows = [row.split("\t", 1) for row in record.file(f"{kernel}.{target}.SASS.txt").read_text().splitlines()]
        loads = {int(line) for line, text in rows if re.search(r"\*/ (?:@!?P\w+ )?LDG\.(?!.*CONSTANT)", text)}
        assert loads == {line_of["tmp0"], line_of["tmp2"]}, (target, loads)
        # The fused multiply-adds on tmp5's line, FFMA, or FFMA2 (two at a time) on sm_100 as some releases
        # compile it: results["fma"], which the page quotes.
        fmas = {op for line, text in rows if line == str(line_of["tmp5"])
                for op in re.findall(r"\*/ (?:@!?P\w+ )?(FFMA2?)\b", text)}
        assert fmas and record.results["fma"][target] == " and ".join(sorted(fmas)), (target, fmas)
        assert "FFMA2" not in fmas or target == "sm_100", (target, fmas)
        if target == "sm_100" and not record.made_with((2, 15)):  # torch 2.13's Triton: fma.rn.f32x2, FFMA2
            assert "FFMA2" in fmas, fmas
        # The cost table counts libdevice's slow path on the sin and cos lines, though it runs only for
        # |x| >= 105,615: the PTX compares |x| with that float (0f47CE4780) there to skip it.
        ptx = [row.split("\t", 1) for row in record.file(f"{kernel}.{target}.PTX.txt").read_text().splitlines()]
        skips = {int(line) for line, text in ptx if re.search(r"setp\.ltu\.f32\s.*0f47CE4780;", text)}
        assert skips == {line_of["tmp1"], line_of["tmp3"]}, (target, skips)
