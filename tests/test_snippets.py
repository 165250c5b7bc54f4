"""Snippets hold the lesson only: sections well formed, no recording plumbing, no files left behind."""

import ast
import re
import subprocess
import sys

import pytest

from scripts import chapters, records

SNIPPETS = records.find_snippets()
# Lines that exist only for recording, besides the plumbing rule's `results` (scripts/chapters.py): a reader
# copying a section out should never see them.
HARNESS = re.compile(
    r"SNIPPET_OUTPUT|os\.environ|\btempfile\b|\bjson\.dumps?\b|results\.json|export_chrome_trace"
    r"|\bOUT\b|render_assets|scripts/"
)
# Calls that leave files in a reader's folder.
WRITES = {"export_chrome_trace", "savefig", "write_text", "write_bytes", "mkdtemp", "to_csv"}


def test_snippets_exist():
    assert SNIPPETS, "no snippets found under snippets/"


@pytest.mark.parametrize("name", SNIPPETS)
def test_sections_are_well_formed(name):
    chapters.section_lines((records.SNIPPETS / name).read_text())  # raises on a start without an end


@pytest.mark.parametrize("name", SNIPPETS)
def test_no_plumbing_inside_shown_sections(name):
    source = (records.SNIPPETS / name).read_text()
    lines = source.splitlines()
    plumbing = set(chapters.plumbing_lines(source))
    found = []
    for section, (first, last) in chapters.section_lines(source).items():
        for number in range(first, last + 1):
            code = lines[number - 1].split("#", 1)[0] if not lines[number - 1].lstrip().startswith("#") else ""
            comment = lines[number - 1] if lines[number - 1].lstrip().startswith("#") else ""
            if number in plumbing or HARNESS.search(code) \
                    or re.search(r"render_assets|scripts/|results\.json", comment):
                found.append(f"snippets/{name}:{number} (section '{section}'): {lines[number - 1].strip()}")
    assert not found, "recording plumbing a reader would see on the page:\n" + "\n".join(found)


@pytest.mark.parametrize("name", SNIPPETS)
def test_no_recording_plumbing_anywhere(name):
    """The runner collects what a record needs: a snippet never picks an output folder or writes JSON."""
    source = (records.SNIPPETS / name).read_text()
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ("SNIPPET_OUTPUT_DIR", "results.json"):
            found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            found.append(f"line {node.lineno}: .{node.func.attr}(...) leaves a file in the reader's folder")
        if isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps") and \
                isinstance(node.value, ast.Name) and node.value.id == "json":
            found.append(f"line {node.lineno}: json.{node.attr}")
    assert not found, f"snippets/{name}:\n" + "\n".join(found)


def test_a_copied_snippet_runs_alone_and_leaves_a_clean_folder(tmp_path):
    """A reader's copy of a snippet prints what the page shows and leaves nothing behind in its folder."""
    name = "dissecting/fx_rewrite.py"
    folder, home = tmp_path / "reader", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    copy = folder / "fx_rewrite.py"
    copy.write_text((records.SNIPPETS / name).read_text())
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "HOME": str(home), "TMPDIR": str(home)}
    result = subprocess.run([sys.executable, copy.name], cwd=folder, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    recorded = records.record(name, "cpu").stdout
    assert result.stdout.splitlines()[:3] == recorded.splitlines()[:3]
    left = sorted(p.name for p in folder.iterdir() if p.name != copy.name)
    assert left == [], f"the snippet left {left} in the reader's folder"


def measure_functions() -> dict[str, str]:
    """snippet -> the code of its `measure` function (docstring left out), for every snippet that times."""
    found = {}
    for name in SNIPPETS:
        for node in ast.parse((records.SNIPPETS / name).read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == "measure":
                body = node.body[1:] if isinstance(node.body[0], ast.Expr) and \
                    isinstance(node.body[0].value, ast.Constant) else node.body
                found[name] = ast.dump(node.args) + ast.dump(ast.Module(body=body, type_ignores=[]))
    return found


def test_every_snippet_times_by_the_one_method():
    """Each timed snippet carries its own copy of `measure`, so it runs alone; the copies must stay one method
    (one for torch, one for JAX, whose arrays torch's Timer cannot wait for)."""
    found = measure_functions()
    assert len(found) >= 10, "the snippets that time should define measure()"
    for framework, members in (("JAX", [n for n in found if n.startswith("jax/")]),
                               ("torch", [n for n in found if not n.startswith("jax/")])):
        variants = {found[n] for n in members}
        assert len(variants) <= 1, (
            f"the {framework} snippets time by {len(variants)} different measure() functions: "
            f"copy the one in {members[0]} to {', '.join(m for m in members if found[m] != found[members[0]])}"
        )


# Top-level functions that share a name across snippets of one framework and are different functions on
# purpose, each with why. Every other shared name is a copy (a snippet runs alone, so a helper it shares is
# copied into it) and must stay one function.
DIFFERENT_ON_PURPOSE = {
    "default": "regimes.py's layer compiled in the default mode; findings_model's the same layer on the meta device",
    "max_autotune": "regimes.py's layer compiled with max-autotune; findings_model's the same layer on the meta device",
    "activation": "compiler_crash's ReLU, where the planted bug sits; data_dependent's own activation",
    "forward": "model_zoo's forward of any model from its inputs; resnet_layout's of images only",
    "fresh": "training_step's fresh model and its optimizer; break_atlas's fresh leaves for a case's inputs",
    "call": "break_atlas calls a function with its arguments; recompile_atlas makes one call for later",
    "same": "break_atlas compares values of any type; recompile_atlas compares a call's result and its gradients",
    "no_grad_inside": "two cases named alike, each with its own body: break_atlas's, recompile_atlas's",
    "autocast_inside": "two cases named alike, each with its own body: break_atlas's, recompile_atlas's",
    "times": "two one-line cases named alike: x times a value (break_atlas), x times an int n (recompile_atlas)",
    "add": "regimes' one-op example; triton_basics' launcher of its Triton add kernel",
    "Block": "transformer_block's block; regional_compile's smaller one, so a stack of them compiles quickly",
    "block": "wrong_output's norm, MLP and head; levers' two-op block with a print",
    "bound_us": "regimes' bound from this machine's measured roofs; memory_model's from an H100's published ones",
    "chain": "two examples: cuda_graphs' launch-bound chain, buffer_reuse's chain of matmuls",
    "complex_activation": "the six ops one per line (where the page counts kernels), in one expression, "
                          "and as a Triton kernel",
    "count": "regimes counts FLOPs and bytes of a call; memory_model of shapes it is given",
    "efficient_attention": "transformer_block's forward-only call for its CUDA code; findings_model's SDPA "
                           "stand-in, which also serves the backward (it asks for the log-sum-exp when grad is on)",
    "counting_backend": "break_triggers keeps the graphs; recompiles keeps each graph's input shapes",
    "inductor_keeping_graphs": "two backends that keep different graphs: each page's own",
    "keep_aten_graph": "an AOTAutograd compiler in one snippet, a graph transform in the other",
    "kernels_and_launches": "one lists kernels with how they compile; the other returns their sources and call()",
    "linear_relu": "one op per line where the page counts kernels, else one expression",
    "largest_difference": "model_zoo compares lists of outputs or gradients; resnet_layout one tensor",
    "listing": "Python bytecode in one snippet, an FX graph's nodes in the other",
    "marked": "recompile_atlas marks one tensor's size; generation wraps a forward that marks the sequence "
              "dimension of every input and cache tensor at each call",
    "matmul": "regimes' torch matmul; tile_order's Triton kernel",
    "no_grad": "transformer_block's inference wrapper of a module; findings_model's of a function",
    "normalise": "each snippet's output code hides what its page does not show",
    "ops": "each snippet names the ops of its own graphs",
    "randn": "each snippet's own inputs (a dtype in one, a scale in the other)",
    "row_sums": "inductor_matmul_softmax's reduction of its lesson; break_atlas's an earlier, wrong fix of "
                "sorted_by_tensor that its probe must catch",
    "report": "cuda_graphs prints a timing; dynamo_bytecode's is the untraced Python call of its lesson",
    "sass_of": "triton_pipeline reads SASS from text; triton_linear_relu from a compiled kernel",
    "show": "each snippet prints its own table",
    "softmax": "torch's softmax; triton_basics' launcher of its Triton softmax kernel",
    "work": "fusion's ops and kernels of a profiled call; findings_model's label of a workload (function, shapes)",
}


def shared_functions() -> dict[str, dict[str, str]]:
    """'framework:name' -> {snippet: code} for every top-level function or class defined in more than one
    snippet of one framework (JAX's snippets have twins of torch's), the docstring left out."""
    found: dict[str, dict[str, str]] = {}
    for name in SNIPPETS:
        framework = "jax" if name.startswith("jax/") else "torch"
        for node in ast.parse((records.SNIPPETS / name).read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                code = ast.dump(node.args) if isinstance(node, ast.FunctionDef) else ast.dump(ast.Tuple(node.bases))
                found.setdefault(f"{framework}:{node.name}", {})[name] = code + ast.dump(
                    ast.Module(body=body, type_ignores=[]))
    return {key: copies for key, copies in found.items() if len(copies) > 1}


def test_a_function_copied_into_several_snippets_stays_one_function():
    """A snippet runs alone, so a helper it shares with others (`measure()`, `logged()`, the HLO parsers of the
    JAX snippets, `first_line()`) is a copy in each. A name defined in two snippets of one framework is one
    function, the same code in every snippet, unless DIFFERENT_ON_PURPOSE says why not."""
    shared = shared_functions()
    assert {"torch:measure", "torch:logged", "jax:computations", "jax:opcodes", "jax:measure",
            "torch:first_line"} <= set(shared)
    differ = {}
    for key, copies in shared.items():
        first = next(iter(copies))
        if any(code != copies[first] for code in copies.values()):
            differ[key.split(":", 1)[1]] = copies
    drifted = [f"{name}() in snippets/{', snippets/'.join(copies)}"
               for name, copies in differ.items() if name not in DIFFERENT_ON_PURPOSE]
    assert not drifted, "copies of one function that differ (make them one, or say why in DIFFERENT_ON_PURPOSE): " \
        + "; ".join(drifted)
    stale = set(DIFFERENT_ON_PURPOSE) - set(differ)
    assert not stale, f"DIFFERENT_ON_PURPOSE names functions that no longer differ: {sorted(stale)}"
