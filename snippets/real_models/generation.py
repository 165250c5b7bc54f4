"""Text generation, compiled: where a growing KV cache meets Dynamo's shape guards.

    python snippets/real_models/generation.py

Generates greedily with a small Llama-style model from Hugging Face transformers
(random weights, nothing downloaded): eagerly, then with its forward compiled four
ways (the default dynamic cache as it is, the same with dynamic shapes asked for up
front, the same with only its sequence dimension marked dynamic, and a static
cache). For each: the graphs compiled by the first sequence and by a second one with
a longer prompt, whether its tokens equal eager's, and the time per generated token.
Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import contextlib
import logging
import re
import time
from logging.handlers import BufferingHandler

import torch
import transformers
from torch._dynamo.utils import counters
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}
torch.manual_seed(0)

# --8<-- [start:model]
on_cpu = device == "cpu"  # width 256 on a CPU; 1024 in bf16 on a GPU
width, dtype = (256, torch.float32) if on_cpu else (1024, torch.bfloat16)
config = transformers.LlamaConfig(
    vocab_size=1000, hidden_size=width, intermediate_size=2 * width,
    num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2)
model = transformers.LlamaForCausalLM(config).to(device, dtype).eval()
eager_forward = model.forward
new_tokens = 32
prompts = {"first": torch.randint(1, 1000, (1, 16), device=device),
           "longer": torch.randint(1, 1000, (1, 24), device=device)}


def greedy(prompt, cache):
    # disable_compile: transformers compiles a static cache's forward by itself on a
    # GPU; here each variant compiles (or not) explicitly, the same on every device.
    with torch.no_grad():
        return model.generate(prompt, max_new_tokens=new_tokens, do_sample=False,
                              min_new_tokens=new_tokens, cache_implementation=cache,
                              disable_compile=True)


def marked(compiled_forward):
    """The forward, compiled, with only the sequence dimension marked dynamic: the last
    of the ids, mask and positions, the third of the cache's keys and values ([batch,
    heads, sequence, head size]). A mark is read only by a call that compiles, but any
    call may compile, and the ids and the cache are new tensors at every step: so
    every call marks them."""
    def forward(**inputs):
        for name in ("input_ids", "attention_mask", "cache_position", "position_ids"):
            if isinstance(inputs.get(name), torch.Tensor):
                torch._dynamo.mark_dynamic(inputs[name], inputs[name].dim() - 1)
        for layer in getattr(inputs.get("past_key_values"), "layers", ()):
            if getattr(layer, "is_initialized", False):
                torch._dynamo.mark_dynamic(layer.keys, 2)
                torch._dynamo.mark_dynamic(layer.values, 2)
        return compiled_forward(**inputs)
    return forward


VARIANTS = {  # name: (the forward generate calls, its KV cache)
    "eager": (eager_forward, "dynamic"),
    "compiled": (torch.compile(eager_forward), "dynamic"),
    "compiled_dynamic": (torch.compile(eager_forward, dynamic=True), "dynamic"),
    "compiled_marked": (marked(torch.compile(eager_forward)), "dynamic"),
    "compiled_static": (torch.compile(eager_forward), "static"),
}
# --8<-- [end:model]
results["sizes"] = {"width": width, "layers": config.num_hidden_layers,
                    "prompts": {k: p.shape[1] for k, p in prompts.items()}}


def measure(candidates, rounds=10):
    """The site's one method. `candidates` maps a name to (fn, *args). Each is warmed
    up and given a block of calls; then one block of each is timed in turn, round
    after round (A, B, A, B, ...), so a burst of load from elsewhere hits all alike.
    Returns name -> Measurement, per call. Timer runs on 1 thread unless told, so it
    is told: all of torch's threads. The recorder repeats the whole snippet in fresh
    processes, so the spread that judges a comparison includes theirs."""
    def work(fn, args):  # what was timed: "compiled f(float32[1024, 256], ...)"
        inner = getattr(fn, "_orig_mod", fn)
        compiled = inner is not fn or hasattr(fn, "_torchdynamo_orig_callable")
        kind = "compiled " if compiled else ""
        shapes = ", ".join(f"{str(a.dtype)[6:]}{list(a.shape)}" for a in args
                           if isinstance(a, torch.Tensor))
        return f"{kind}{getattr(inner, '__name__', type(inner).__name__)}({shapes})"

    timers = {name: benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                    label=work(fn, args),
                                    num_threads=torch.get_num_threads())
              for name, (fn, *args) in candidates.items()}
    calls = {name: timer.blocked_autorange(min_run_time=0.2).number_per_run
             for name, timer in timers.items()}  # warm-up; picks calls per block
    blocks = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            blocks[name].append(timer.timeit(calls[name]))
    return {name: benchmark.Measurement.merge(b)[0] for name, b in blocks.items()}


@contextlib.contextmanager
def recompile_log(messages):
    """Keep what TORCH_LOGS=recompiles prints (and Dynamo's warnings) in messages."""
    handler = BufferingHandler(capacity=10_000)
    dynamo_log = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(recompiles=True)
    dynamo_log.addHandler(handler)
    try:
        yield
    finally:
        dynamo_log.removeHandler(handler)
        torch._logging.set_logs()  # back to the default: nothing logged
        messages += [record.getMessage() for record in handler.buffer]


def failed_guards(message):
    """Each graph compiled before, and the first of its guards this call failed."""
    lines = [line.strip()[2:] for line in message.splitlines()
             if re.match(r"\s*- \d+/\d+: ", line)]
    return [re.sub(r"\s+#.*", "", line) for line in lines]


def generate_with(forward, cache, prompt):
    model.forward = forward
    return greedy(prompt, cache)


# --8<-- [start:compiles]
tokens, compiles, timings = {}, {}, {}
for name, (forward, cache) in VARIANTS.items():
    torch._dynamo.reset()  # each variant compiles from nothing: its counts are its own
    for prompt_name, prompt in prompts.items():
        counters.clear()
        messages = []
        start = time.perf_counter()
        with recompile_log(messages):
            tokens[name, prompt_name] = generate_with(forward, cache, prompt)
        seconds = time.perf_counter() - start
        compiles[name, prompt_name] = counters["stats"]["unique_graphs"]
        breaks = sum(counters["graph_break"].values())
        print(f"{name:<16} {prompt_name:<6} prompt: {seconds:6.1f} s, "
              f"{compiles[name, prompt_name]} graphs compiled, {breaks} breaks")
        for message in messages:
            if message.startswith("Recompiling function"):
                print("    recompiled; the guard each graph before it failed:")
                for failure in failed_guards(message):
                    print(f"      {failure}")
    if name != "eager":  # time it now, against eager, while its graphs are compiled
        timings[name] = measure({
            "eager": (generate_with, eager_forward, "dynamic", prompts["first"]),
            "compiled": (generate_with, forward, cache, prompts["first"])})
same = {name: all(torch.equal(tokens[name, p], tokens["eager", p]) for p in prompts)
        for name in VARIANTS}
print("tokens equal eager's:", same)
# --8<-- [end:compiles]
results["compiles"] = {f"{n}|{p}": c for (n, p), c in compiles.items()}
results["same_tokens"] = same

# --8<-- [start:timing]
for name, pair in timings.items():
    eager, compiled = (pair[k].median / new_tokens * 1e3 for k in ("eager", "compiled"))
    print(f"{name:<16} {compiled:6.2f} ms per token, eager beside it {eager:6.2f} ms "
          f"(n = {len(pair['compiled'].times)})")
# --8<-- [end:timing]
results["per_sequence"] = timings
results["new_tokens"] = new_tokens
