"""The CUDA paths, without a GPU: Inductor's CUDA code for an H100 (tests/cuda_dry_run.py), read by the
snippets' own parsers and held to the chapters' checks, so the first run on a GPU box meets no surprise
that a CPU could have shown. Only what needs no measurement is checked here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cuda_dry_run import definitions
from facts.dissecting.inductor_matmul_softmax import check_launches, check_lowering_and_fusion
from facts.graph_mode.inductor_linear_relu import check_autotune, check_linear_relu

# One worker makes the code once; slow, and reads only the checkout: kept while it is unchanged
# (tests/conftest.py).
pytestmark = [pytest.mark.xdist_group("cuda_dry_run"), pytest.mark.kept]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cuda-dry-run")
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("cuda_dry_run.py")), str(folder)],
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""), capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        pytest.fail(f"making Inductor's CUDA code without a GPU failed:\n{done.stderr[-4000:]}", pytrace=False)
    return folder


def code(made: Path, case: str) -> str:
    return (made / f"{case}.output_code.py").read_text()


def test_matmul_softmax_lowers_to_an_online_softmax_and_launches_each_kernel(made):
    snippet = definitions("dissecting/inductor_matmul_softmax.py", {"scheduler_nodes", "kernels_and_launches"})
    (pre_text,) = made.glob("matmul_softmax/torchinductor/*/ir_pre_fusion.txt")
    pre = snippet["scheduler_nodes"](pre_text.read_text())
    post = snippet["scheduler_nodes"](pre_text.with_name("ir_post_fusion.txt").read_text())
    check_lowering_and_fusion(pre, post, cuda=True)
    kernels, launches = snippet["kernels_and_launches"](code(made, "matmul_softmax"))
    check_launches([name for name, _ in kernels], launches, cuda=True)


@pytest.mark.parametrize("winner", ["library", "template"])
def test_linear_relu_launches_are_found_in_every_mode(made, winner):
    snippet = definitions("graph_mode/inductor_linear_relu.py", {"COMMENTS", "normalise", "kernels_and_launches"})

    def parse(case):
        kernels, _, launches = snippet["kernels_and_launches"](snippet["normalise"](code(made, case)))
        return list(kernels), launches

    check_linear_relu(*parse("linear_relu"))
    # max-autotune turns CUDA graphs on, and graph partitioning then moves every launch into partition_0.
    assert "def partition_0(" in code(made, f"linear_relu.autotune.{winner}")
    kernels, launches = parse(f"linear_relu.autotune.{winner}")
    folded = bool(launches) and not any(n.startswith("extern_kernels") for n in launches)  # as the snippet
    check_autotune(kernels, launches, folded)
    assert folded == (winner == "template")


@pytest.mark.parametrize("case", ["buffer_reuse", "buffer_reuse.no_partition"])
def test_buffer_reuse_finds_call_with_or_without_graph_partitioning(made, case):
    call_body = definitions("optimizations/buffer_reuse.py", {"call_body"})["call_body"]
    body = call_body(code(made, case))
    assert body.startswith("def call(") and "extern_kernels.mm(" in body
    assert "empty_strided_cuda(" in body and "# reuse" in body and "return (" in body


def test_the_dry_run_names_its_stack(made):
    versions = json.loads((made / "made.json").read_text())["versions"]
    assert versions["torch"] and versions["triton"]
