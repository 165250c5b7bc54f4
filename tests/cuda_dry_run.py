"""Inductor's CUDA code for the snippets that parse it, made for an H100 on a machine without a GPU.

    python tests/cuda_dry_run.py FOLDER

writes, for each case below, FOLDER/<case>.output_code.py (and, for traced cases, Inductor's debug folder
FOLDER/<case>/), in the modes the snippets compile in: default, max-autotune (CUDA graphs and graph
partitioning on) with either the library GEMM or a Triton template winning, and graph partitioning off.
tests/test_cuda_dry_run.py then runs the snippets' own parsers, and the chapter checks, on that text.

It takes the snippets' functions and the H100 stand-ins of snippets/gpu_code/inductor_cuda_code.py without
running the snippets' bodies. max-autotune's benchmark is answered, not run (the winner is the case's), and
epilogue-fusion benchmarks are off: both would launch kernels. Runs in a process of its own, so the
stand-ins and Inductor's caches never meet another test.
"""

from __future__ import annotations

import ast
import contextlib
import json
import sys
from pathlib import Path
from unittest import mock

SNIPPETS = Path(__file__).resolve().parents[1] / "snippets"


def definitions(snippet: str, names: set[str]) -> dict:
    """The named top-level functions, classes and assignments of snippets/<snippet>, with its imports, and
    nothing else of it run."""
    tree = ast.parse((SNIPPETS / snippet).read_text())
    kept = [node for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names)
            or (isinstance(node, ast.Assign) and {getattr(t, "id", None) for t in node.targets} & names)]
    found = {getattr(n, "name", None) for n in kept} | {getattr(t, "id", None) for n in kept
                                                        for t in getattr(n, "targets", [])}
    if missing := names - found:
        raise LookupError(f"snippets/{snippet} no longer defines {', '.join(sorted(missing))}")
    namespace = {"__name__": f"dry_run:{snippet}"}
    exec(compile(ast.Module(kept, type_ignores=[]), str(SNIPPETS / snippet), "exec"), namespace)
    return namespace


def cases() -> dict:
    softmax = definitions("dissecting/inductor_matmul_softmax.py", {"simple_fn"})["simple_fn"]
    chain = definitions("optimizations/buffer_reuse.py", {"chain"})["chain"]
    # inductor_linear_relu.py's layer (Linear(256, 256), ReLU) as a function of its weights.
    linear_relu = definitions("gpu_code/inductor_cuda_code.py", {"linear_relu"})["linear_relu"]
    autotune = {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True}
    layer = [(64, 256), (256, 256), (256,)]
    return {  # name: (function, input shapes, Inductor config, the GEMM that wins an autotune, traced)
        "matmul_softmax": (softmax, [(100, 100), (100, 100)], {}, None, True),
        "linear_relu": (linear_relu, layer, {}, None, False),
        "linear_relu.autotune.library": (linear_relu, layer, autotune, "library", False),
        "linear_relu.autotune.template": (linear_relu, layer, autotune, "template", False),
        "buffer_reuse": (chain, [(512, 512), (512, 512)], {}, None, False),
        "buffer_reuse.no_partition": (chain, [(512, 512), (512, 512)], {"graph_partition": False}, None, False),
    }


def generate(folder: Path) -> dict:
    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.select_algorithm import AlgorithmSelectorCache, ExternKernelCaller
    from torch._subclasses.fake_tensor import FakeTensorMode

    gpu = definitions("gpu_code/inductor_cuda_code.py", {"H100", "h100_stand_ins", "CodeWritten", "stopped_by_us"})
    made = {}
    for name, (fn, shapes, config, winner, traced) in cases().items():
        seen = {}

        def save_output_code(code, seen=seen):
            seen["code"] = code
            raise gpu["CodeWritten"]

        def answer_benchmark(self, choices, *args, winner=winner, **kwargs):
            library = winner == "library"
            return lambda choices: {c: 1.0 if isinstance(c, ExternKernelCaller) == library else 2.0
                                    for c in choices}

        patch = {"fx_graph_cache": False, "autotune_local_cache": False, "compile_threads": 1,
                 "benchmark_epilogue_fusion": False, **config}
        if traced:
            patch |= {"trace.enabled": True, "trace.debug_dir": str(folder / name)}
        with contextlib.ExitStack() as stack:
            stack.enter_context(gpu["h100_stand_ins"]())
            stack.enter_context(torch._inductor.config.patch(patch))
            stack.enter_context(mock.patch.object(GraphLowering, "save_output_code", save_output_code))
            stack.enter_context(mock.patch.object(AlgorithmSelectorCache, "make_benchmark_fn", answer_benchmark))
            torch._dynamo.reset()
            with FakeTensorMode():
                inputs = [torch.empty(shape, device="cuda") for shape in shapes]
                try:
                    compile_fx(torch.fx.symbolic_trace(fn), inputs)
                except Exception as error:
                    if not gpu["stopped_by_us"](error):
                        raise
        (folder / f"{name}.output_code.py").write_text(seen["code"])
        made[name] = {"output_code": f"{name}.output_code.py", "config": config, "winner": winner,
                      "debug": sorted(p.relative_to(folder).as_posix() for p in (folder / name).rglob("*.txt"))
                      if traced else []}
    made["versions"] = {"torch": torch.__version__, "triton": __import__("triton").__version__}
    (folder / "made.json").write_text(json.dumps(made, indent=1))
    return made


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/cuda_dry_run.py FOLDER")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    generate(out)
