"""Dynamo at the bytecode level: what it does to a function with a graph break.

    python snippets/dissecting/dynamo_bytecode.py

Catches the code objects Dynamo makes with a bytecode hook and prints the original and
the rewritten bytecode (offsets, opcodes and names; no addresses), then the resume
function Dynamo generated for the code after the break. depyf, if installed
(pip install depyf), decompiles the rewritten bytecode into Python. Then
fullgraph=True, which turns the break into an error, and torch.compiler.disable.
"""

import dis
import re

import torch
import torch._dynamo.testing
from torch._dynamo.convert_frame import register_bytecode_hook

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device
torch.manual_seed(0)


# --8<-- [start:function]
def sin_then_relu(x):
    y = torch.sin(x) * 2
    print("graph break: Python runs this line")
    return torch.relu(y) + 1
# --8<-- [end:function]


# --8<-- [start:hook]
pairs = []  # (original code, rewritten code), one pair per frame Dynamo compiles


def keep_bytecode(original, rewritten):
    pairs.append((original, rewritten))
    return None  # None: run Dynamo's code as it is


handle = register_bytecode_hook(keep_bytecode)
try:
    compiled = torch.compile(sin_then_relu, backend="eager")  # eager: no Inductor
    x = torch.randn(8, device=device)
    out = compiled(x)
finally:
    handle.remove()
expected = torch.relu(torch.sin(x) * 2) + 1  # what the function computes
print(f"matches eager: {torch.allclose(out, expected)}")
for original, rewritten in pairs:
    before, after = (len(list(dis.get_instructions(c))) for c in (original, rewritten))
    print(f"compiled frame {original.co_name}: {before} instructions -> {after}")
# --8<-- [end:hook]
results["matches"] = torch.allclose(out, expected)
results["frames"] = [original.co_name for original, _ in pairs]


# --8<-- [start:listing]
def listing(code, keep=lambda instruction: True):
    """dis without line numbers or addresses: offset, opcode, argument."""
    lines = []
    for ins in dis.get_instructions(code):
        if keep(ins):
            # __compiled_fn_2_<random uuid> -> __compiled_fn_2
            arg = re.sub(r"(__compiled_fn_\d+)_[0-9a-f_]{36}", r"\1", ins.argrepr)
            lines.append(f"{ins.offset:>4} {ins.opname:<18} {arg}".rstrip())
    return "\n".join(lines)
# --8<-- [end:listing]


# --8<-- [start:original]
original, rewritten = pairs[0]
print(listing(original))
# --8<-- [end:original]
results["original"] = listing(original)


# --8<-- [start:rewritten]
def names_and_calls(ins):  # loads and stores of names, calls and returns
    return ins.opname.startswith(("LOAD_GLOBAL", "LOAD_FAST", "STORE_FAST", "CALL",
                                  "RETURN"))


shown = listing(rewritten, keep=names_and_calls)
total = len(list(dis.get_instructions(rewritten)))
print(f"{len(shown.splitlines())} of {total} instructions (names, calls, returns):")
print(shown)
# --8<-- [end:rewritten]
results["rewritten_shown"] = shown
results["rewritten_instructions"] = total
results["files"] = {"rewritten.dis.txt": listing(rewritten) + "\n"}
names = [ins.argrepr for ins in dis.get_instructions(rewritten)]

# --8<-- [start:resume]
resume_name = next(n for n in rewritten.co_names if n.startswith("__resume_at_"))
resume = sin_then_relu.__globals__[resume_name]  # Dynamo put it in the module's globals
offset = int(re.match(r"__resume_at_(\d+)", resume_name).group(1))
at = next(i for i in dis.get_instructions(original) if i.offset == offset)
arguments = resume.__code__.co_varnames[:resume.__code__.co_argcount]
print(f"{resume_name} is {resume.__code__.co_name}{arguments}")
print(f"it resumes the original at offset {offset}: {at.opname}, right after the print")
resume_original, resume_rewritten = pairs[1]
print(f"its own bytecode, as Dynamo generated it ({resume_original.co_name}):")
print(listing(resume_original))
# --8<-- [end:resume]
results["resume"] = {
    "global": re.sub(r"_\d+$", "", resume_name),
    "name": resume.__code__.co_name,
    "arguments": arguments,
    "offset": offset,
    "resumes_at": at.opname,
    "compiled_frame": resume_original.co_name,
    "calls_compiled_graph": any(n.startswith("__compiled_fn_") for n in
                                resume_rewritten.co_names),
}
results["rewritten_names"] = {
    "compiled_fn": any(n.startswith("__compiled_fn_") for n in rewritten.co_names),
    "resume": resume_name.startswith("__resume_at_"),
    "print": "'print'" in names,
}

# --8<-- [start:depyf]
try:
    import depyf  # pip install depyf
except ImportError:
    depyf = None
    print("depyf is not installed (pip install depyf): no decompiled source")
if depyf is not None:
    for _, code in pairs:
        source = depyf.decompile(code)
        print(re.sub(r"(__compiled_fn_\d+)_[0-9a-f_]{36}", r"\1", source).strip())
# --8<-- [end:depyf]
results["depyf"] = {"available": depyf is not None,
                    "version": getattr(depyf, "__version__", None)}

# --8<-- [start:fullgraph]
torch._dynamo.reset()  # forget the graphs above, so this call compiles afresh
strict = torch.compile(sin_then_relu, backend="eager", fullgraph=True)
try:
    strict(x)
    error = None
except torch._dynamo.exc.Unsupported as raised:
    error = raised
    print(f"{type(raised).__name__}: {str(raised).splitlines()[0]}")
    print(next(line.strip() for line in str(raised).splitlines()
               if "Explanation" in line))
# --8<-- [end:fullgraph]
results["fullgraph"] = {"raised": error is not None,
                        "error": type(error).__name__ if error else None,
                        "first_line": str(error).splitlines()[0] if error else None}


# --8<-- [start:disable]
@torch.compiler.disable
def report(y):  # Dynamo does not trace it: it runs as plain eager Python
    print(f"report: compiling={torch.compiler.is_compiling()}, mean={y.mean():.3f}")


def sin_report_relu(x):
    y = torch.sin(x) * 2
    report(y)
    return torch.relu(y) + 1


torch._dynamo.reset()
counter = torch._dynamo.testing.CompileCounter()  # a backend that counts graphs
out = torch.compile(sin_report_relu, backend=counter)(x)
print(f"graphs: {counter.frame_count}, ops in them: {counter.op_count}")
explained = torch._dynamo.explain(sin_report_relu)(x)
print(f"break: {str(explained.break_reasons[0].reason).splitlines()[0]}")
# --8<-- [end:disable]
results["disable"] = {
    "graphs": counter.frame_count,
    "ops": counter.op_count,
    "breaks": explained.graph_break_count,
    "reason": str(explained.break_reasons[0].reason).splitlines()[0],
    "matches": torch.allclose(out, expected),
}
