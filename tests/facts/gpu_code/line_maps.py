"""The check of snippets/gpu_code/line_maps.py: what the explorer on dissecting/triton.md shows and its text
says, held on every record of it."""

from facts import check

STAGES = ("TTIR", "TTGIR", "LLVM IR", "PTX", "SASS")
TENSOR_CORE = {"sm_80": "HMMA", "sm_90": "HGMMA", "sm_100": "UTCHMMA"}


def stage_lines(record, kernel, target, stage):
    """A stage's lines as (source line or None, text), read back from the record's file."""
    text = record.file(f"{kernel}.{target}.{stage.replace(' ', '_')}.txt").read_text()
    pairs = []
    for row in text.splitlines():
        line, tab, code = row.partition("\t")
        assert tab, f"{kernel}.{target}.{stage}: a row without its tab: {row!r}"
        pairs.append((None if line == "-" else int(line), code))
    return pairs


@check("gpu_code/line_maps.py")
def _(record):
    maps = record.results["maps"]
    assert set(maps) == {"matmul_bias_relu", "complex_activation"}
    for name, kernel in maps.items():
        first, source = kernel["first_line"], kernel["source"]
        assert source[0].strip() == "@triton.jit" and source[1].startswith(f"def {name}(")
        lines = range(first, first + len(source))
        assert kernel["code_lines"] and set(kernel["code_lines"]) <= set(lines)
        assert set(kernel["targets"]) == set(TENSOR_CORE)
        for target, found in kernel["targets"].items():
            for stage in STAGES:
                pairs = stage_lines(record, name, target, stage)
                # The map points only at lines of the kernel, and its counts are the file's.
                assert {line for line, _ in pairs if line} <= set(lines), (name, target, stage)
                assert len(pairs) == found["lines"][stage] > 0
                assert sum(line is None for line, _ in pairs) == found["unmapped"][stage]
                assert found["sources"][stage] == sorted({line for line, _ in pairs if line})
            sass = stage_lines(record, name, target, "SASS")
            assert sum(c["sass"] for c in found["cost"].values()) == len(sass)
            assert found["sass_mapped_share"] == 1 - found["unmapped"]["SASS"] / len(sass)
            silent = {stage: [source[line - first].strip().split("  #")[0]
                              for line in kernel["code_lines"] if line not in found["sources"][stage]]
                      for stage in STAGES}
            if name == "complex_activation":
                # triton.md: every line of the activation keeps instructions of its own in every stage. Up to
                # torch 2.13's Triton, the inlined libdevice code of sin and cos keeps the calling line, and
                # every SASS line carries a kernel line; torch 2.15's gives it line 0 from PTX on, and most
                # of the SASS carries none.
                assert not any(silent.values()), silent
                if record.made_with((2, 15)):
                    assert found["sass_mapped_share"] < 0.5 and found["unmapped"]["PTX"] > found["lines"]["PTX"] / 2
                else:
                    assert found["sass_mapped_share"] == 1, found["sass_mapped_share"]
                continue
            # triton.md: acc's zeros carry their line in no stage, ks only in TTIR; a += BLOCK_K keeps it down to
            # PTX, and into SASS only on sm_90 with torch 2.15's Triton.
            acc, ks, step = ("acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)", "ks = tl.arange(0, BLOCK_K)",
                             "a += BLOCK_K")
            assert silent["TTIR"] == [acc], silent
            for stage in ("TTGIR", "LLVM IR", "PTX"):
                assert silent[stage] == [ks, acc], (stage, silent)
            in_sass = record.made_with((2, 15)) and target == "sm_90"
            assert silent["SASS"] == ([ks, acc] if in_sass else [ks, acc, step]), (target, silent)
            # The tl.dot line holds the target's tensor-core instructions, and no other line does.
            dot = next(line for line in kernel["code_lines"] if "tl.dot(" in source[line - first])
            holders = {line for line, text in sass if TENSOR_CORE[target] in text.split("*/", 1)[1]}
            loop = next(line for line in kernel["code_lines"] if source[line - first].lstrip().startswith("for "))
            # (torch 2.11's Triton 3.6 credits some of sm_90's to the loop's line too)
            assert holders == {dot} if record.made_with((2, 13)) else dot in holders <= {dot, loop}, (target, holders)
            assert found["cost"][str(dot)]["tensor"] > 0
            # triton.md's quiz: the same line holds the loads of both tiles (tl.load(a), tl.load(b) are on it).
            assert found["cost"][str(dot)]["memory"] > 0 and "tl.load(a)" in source[dot - first]
    if record.device == "cpu":
        assert "without a GPU" in record.results["label"]
