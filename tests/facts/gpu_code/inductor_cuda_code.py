"""The check of snippets/gpu_code/inductor_cuda_code.py: what dissecting/inductor.md and dissecting/triton.md say
about it, held on every record of it."""

import re

from facts import check, skip_unless_pinned


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
    # inductor.md: on a Triton target the max and sum become one online-softmax reduction, and exp is
    # computed twice (once in the reduction, once for the output).
    assert "online" in reduction, reduction
    assert soft["sources"][reduction].count("exp(") >= 2
    assert soft["launches"] == ["extern_kernels.mm", f"{reduction}.run"]
    assert sum(soft["bytes_per_kernel"].values()) == soft["num_bytes_accessed"]
    assert "@triton.jit" in record.file(act["file"]).read_text()
    assert kernel in record.section("activation")
    if record.device == "cuda":
        for name in ("complex_activation", "linear_relu", "matmul_softmax"):
            assert generated[name]["max_error"] is not None
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
        # inductor-cuda.md: xnumel, xmask, x0 and tmp7 have no line in any stage. Up to torch 2.13, tmp8 calls
        # the inlined triton_helpers.maximum, which keeps its call site down to LLVM IR and loses it from PTX
        # on, and tmp4's line has no SASS; torch 2.15 writes tl.maximum, and every SASS line has a kernel line.
        for stage in ("TTIR", "TTGIR", "LLVM IR"):
            assert silent[stage] == ["xnumel", "xmask", "x0", "tmp7"], (target, stage, silent[stage])
        if record.made_with((2, 15)):
            assert code[first + source.index(next(t for t in source if "tmp8 = " in t))].startswith(
                "tmp8 = tl.maximum("), source
            assert silent["PTX"] == silent["SASS"] == ["xnumel", "xmask", "x0", "tmp7"], (target, silent)
        else:
            assert silent["SASS"] == ["xnumel", "xmask", "x0", "tmp4", "tmp7", "tmp8"], (target, silent["SASS"])
            assert "tmp8" in silent["PTX"] and ("tmp4" in silent["PTX"]) == (target != "sm_100"), silent["PTX"]
        fma_line = next(line for line in code if code[line].startswith("tmp5 = "))
        sass = record.file(f"{kernel}.{target}.SASS.txt").read_text()
        # FFMA (FFMA2 on sm_100, two at a time)
        assert any(row.startswith(f"{fma_line}\t") and re.search(r"\*/ FFMA2? ", row) for row in sass.splitlines())
        if record.made_with((2, 15)):
            assert mapped["sass_mapped_share"] == 1, mapped["sass_mapped_share"]
        else:
            assert 0.9 < mapped["sass_mapped_share"] < 1, mapped["sass_mapped_share"]
