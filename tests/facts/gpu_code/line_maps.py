"""The check of snippets/gpu_code/line_maps.py: what the explorer on dissecting/triton.md shows and its text
says, held on every record of it."""

import re
import struct

from facts import check

STAGES = ("TTIR", "TTGIR", "LLVM IR", "PTX", "SASS")
TENSOR_CORE = {"sm_80": "HMMA", "sm_90": "HGMMA", "sm_100": "UTCHMMA"}


def global_op(text):
    """The opcode of a SASS global load or store, its modifiers dropped but CONSTANT ("LDG.CONSTANT"), or None."""
    op = text.split("*/", 1)[1].split()
    op = op[1] if op[0].startswith("@") else op[0]
    if not op.startswith(("LDG.", "STG.")) or op.startswith("LDGSTS") or op.startswith("LDGDEPBAR"):
        return None
    return op[:3] + (".CONSTANT" if ".CONSTANT" in op else "")


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
            # triton.md: LLVM's .loc inside a multi-line inline-asm block drifts a line further per line of the
            # block; the map puts each block back at its first line, in PTX and in the SASS ptxas makes of it,
            # and that SASS holds Triton's instructions in Triton's order. Torch 2.15's Triton drifts; older ones
            # write no .loc inside a block, and nothing moves.
            assert found["asm"]["same_sass"], (name, target)
            assert (found["asm"]["moved"]["SASS"] > 0) == record.made_with((2, 15)), (name, target, found["asm"])
            # With the blocks at their lines, every SASS instruction of both kernels carries a line of the kernel.
            assert found["sass_mapped_share"] == 1, (name, target, found["sass_mapped_share"])
            at = {text.strip().split(" = ")[0]: line for line, text in
                  ((first + i, t) for i, t in enumerate(source)) if line in kernel["code_lines"]}
            if name == "complex_activation":
                # triton.md: every line of the activation keeps instructions of its own in every stage; x and y
                # are loaded on their own lines, libdevice's tables and code sit on the line that calls sin and cos.
                assert not any(silent.values()), silent
                loads = {line for line, text in sass if global_op(text) == "LDG"}
                assert loads == {at["x"], at["y"]}, (target, loads, at)
                assert {line for line, text in sass if global_op(text) == "LDG.CONSTANT"} == {at["out"]}, target
                # triton.md: the cost table counts libdevice's slow path in full, though it runs only for
                # |x| >= 105,615: the PTX compares |x| with that float (its bits, 0f47CE4780) to skip it.
                assert struct.unpack(">f", bytes.fromhex("47CE4780"))[0] == 105615.0
                ptx = stage_lines(record, name, target, "PTX")
                skip = r"setp\.ltu\.f32\s.*0f47CE4780;"
                assert any(line == at["out"] and re.search(skip, text) for line, text in ptx), target
                continue
            # triton.md: acc's zeros carry their line in no stage, ks only in TTIR; a += BLOCK_K keeps it down to
            # PTX, and has no SASS of its own.
            acc, ks, step = ("acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)", "ks = tl.arange(0, BLOCK_K)",
                             "a += BLOCK_K")
            assert silent["TTIR"] == [acc], silent
            for stage in ("TTGIR", "LLVM IR", "PTX"):
                assert silent[stage] == [ks, acc], (stage, silent)
            assert silent["SASS"] == [ks, acc, step], (target, silent)
            # The bias is loaded on its own line, and the epilogue's line after it loads nothing (the drift
            # charged the bias loads to it).
            bias, epilogue = at["bias"], at["bias"] + 1
            assert "LDG" in {global_op(text) for line, text in sass if line == bias}, target
            assert not found["cost"].get(str(epilogue), {}).get("memory"), (target, found["cost"].get(str(epilogue)))
            # The tl.dot line holds the target's tensor-core instructions, and no other line does.
            dot = next(line for line in kernel["code_lines"] if "tl.dot(" in source[line - first])
            holders = {line for line, text in sass if TENSOR_CORE[target] in text.split("*/", 1)[1]}
            loop = next(line for line in kernel["code_lines"] if source[line - first].lstrip().startswith("for "))
            # (torch 2.11's Triton 3.6 credits one of sm_90's to the loop's line too)
            assert holders == {dot} if record.made_with((2, 13)) else dot in holders <= {dot, loop}, (target, holders)
            # triton.md's quiz: the same line holds the loads of both tiles (tl.load(a), tl.load(b) are on it), and on
            # sm_100 more other instructions than tensor-core ones; results["dot"] is that line's row of the table.
            assert record.results["dot"]["line"] == dot and record.results["dot"][target] == found["cost"][str(dot)]
            counts = found["cost"][str(dot)]
            assert counts["tensor"] > 0 and counts["memory"] > 0 and "tl.load(a)" in source[dot - first]
            assert target != "sm_100" or counts["other"] > counts["tensor"], counts
    # triton.md: the output's last lines count the SASS that putting inline asm back at its line moved.
    report = record.section("report")
    assert "SASS lines moved by putting inline asm back at its line" in report
    for name, kernel in maps.items():
        counts = ", ".join(str(found["asm"]["moved"]["SASS"]) for found in kernel["targets"].values())
        assert f"  {name}: {counts}" in report, (name, counts)
    if record.device == "cpu":
        assert "without a GPU" in record.results["label"]
