"""When the compiler itself fails: read the error, find the stage, keep running, report.

    python snippets/dissecting/compiler_crash.py

Inductor has a switch made for testing its own repro tools: it plants a bug in the
code it generates for ReLU (`inject_relu_bug_TESTING_ONLY`), and "compile_error" makes
that code fail to compile, as a compiler bug would. The snippet compiles a small block
that uses ReLU, then does what a user does with such a failure: reads the error,
compiles with each backend of the stack to find the stage that fails, keeps the
program running (the failed frame falls back to eager; or the failing function is
fenced off), and makes the repro script that a bug report needs. Runs on CUDA when
torch sees a GPU, else on the CPU. Nothing here is timed.
"""

import logging
import re
import tempfile
from pathlib import Path

import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}
torch.manual_seed(0)


# --8<-- [start:model]
def activation(h):
    return torch.relu(h)


class Block(nn.Module):  # a transformer's MLP with its residual
    def __init__(self, width=64):
        super().__init__()
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(activation(self.up(x)))


model = Block().to(device)
x = torch.randn(8, 64, device=device)
expected = model(x)
# --8<-- [end:model]

# --8<-- [start:plant]
# Inductor's C++ backend (CPU) and its Triton backend (GPU) each have the switch.
inductor = torch._inductor.config
backend_config = inductor.triton if device == "cuda" else inductor.cpp
backend_config.inject_relu_bug_TESTING_ONLY = "compile_error"
# --8<-- [end:plant]


# --8<-- [start:crash]
def first_error_lines(error, most=3):
    """The exception's type and the lines of its message that name the failure."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines[1:] if re.search(r"\berror\b", line, re.IGNORECASE)]
    return [f"{type(error).__name__}: {lines[0]}", *named[:most - 1]]


torch._dynamo.reset()
try:
    torch.compile(model)(x)
    raised = None
except Exception as error:  # noqa: BLE001 (whatever the compiler raises is the lesson)
    raised = first_error_lines(error)
    for line in raised:  # the generated file's folder and hashed name shortened
        print(re.sub(r"/\S+/\w+\.", "kernel.", line)[:110])
# --8<-- [end:crash]
results["raised"] = raised is not None
results["exception"] = raised[0].split(":")[0] if raised else None

# --8<-- [start:stages]
# Dynamo alone, then AOTAutograd, then Inductor: the first backend that fails
# names the stage with the bug.
stages = {}
for backend in ("eager", "aot_eager", "inductor"):
    torch._dynamo.reset()
    try:
        out = torch.compile(model, backend=backend)(x)
        same = torch.allclose(out, expected)
        stages[backend] = "ran, same as eager" if same else "ran, different"
    except Exception as error:  # noqa: BLE001
        stages[backend] = f"failed: {type(error).__name__}"
    print(f"backend={backend!r:12} {stages[backend]}")
# --8<-- [end:stages]
results["stages"] = stages


# --8<-- [start:fallback]
# Keep the program running: a frame whose compile fails runs eagerly instead, with
# a warning. Every other frame stays compiled.
class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage().splitlines()[0])


warnings, dynamo_log = Warnings(), logging.getLogger("torch._dynamo")
printing = dynamo_log.handlers
dynamo_log.handlers = [warnings]  # each warning holds the whole C++ error: keep a line
torch._dynamo.reset()
torch._dynamo.config.suppress_errors = True
out = torch.compile(model)(x)
torch._dynamo.config.suppress_errors = False
dynamo_log.handlers = printing
print("suppress_errors=True: same as eager:", torch.allclose(out, expected))
for message in warnings.messages:
    print("warning:", re.sub(r"/\S+/", "", message))
# --8<-- [end:fallback]
results["fallback"] = {"same_as_eager": torch.allclose(out, expected),
                       "warned": bool(warnings.messages)}


# --8<-- [start:fence]
# Or fence the failing function off, where it is defined (not inside compiled code):
# Dynamo skips a disabled function, breaks the graph around the call and runs it
# eagerly; the code before and after it is still compiled by Inductor.
fenced_activation = torch.compiler.disable(activation)


class Fenced(Block):
    def forward(self, x):
        return x + self.down(fenced_activation(self.up(x)))


fenced = Fenced().to(device)
fenced.load_state_dict(model.state_dict())
torch._dynamo.reset()
explained = torch._dynamo.explain(fenced)(x)
torch._dynamo.reset()
out = torch.compile(fenced)(x)
print(f"fenced: {explained.graph_count} graphs, {explained.graph_break_count} break, "
      f"same as eager: {torch.allclose(out, expected)}")
# --8<-- [end:fence]
results["fence"] = {"graphs": explained.graph_count,
                    "breaks": explained.graph_break_count,
                    "same_as_eager": torch.allclose(out, expected)}

scratch = tempfile.TemporaryDirectory()  # torch's debug files go here, removed below
torch._dynamo.config.debug_dir_root = scratch.name

# --8<-- [start:repro]
# For the bug report: with repro_after="aot", a failing Inductor compile first writes
# a script that rebuilds the graph Inductor was given, its inputs' shapes and the
# configs that differ from the defaults. It runs without your model's code.
torch._dynamo.config.repro_after = "aot"
torch._dynamo.reset()
try:
    torch.compile(model)(x)
except Exception:  # noqa: BLE001 (the same failure as above)
    pass
torch._dynamo.config.repro_after = None
debug_dir = Path(torch._dynamo.config.debug_dir_root)
launcher = next(debug_dir.rglob("minifier_launcher.py"))
script = launcher.read_text()
ops = re.findall(r"torch\.ops\.aten\.(\w+)", script)
print("wrote", launcher.name)
print("  aten ops of the graph:", ", ".join(ops))
print("  the planted switch:", "inject_relu_bug_TESTING_ONLY" in script)
command = re.search(r"command='(\w+)'", script).group(1)
print(f"  run, it calls run_repro(..., command={command!r}):")
print("  it shrinks the graph to the ops that still fail")
# --8<-- [end:repro]
results["repro"] = {"ops": ops, "command": command,
                    "keeps_config": "inject_relu_bug_TESTING_ONLY" in script}
backend_config.inject_relu_bug_TESTING_ONLY = None
scratch.cleanup()
