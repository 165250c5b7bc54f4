"""Real models, compiled: five architectures readers run, from Hugging Face
transformers, built from their configs with random weights (nothing is downloaded).

    python snippets/real_models/model_zoo.py

For each model: compile it, count its graphs and graph breaks, time its first call
cold (empty caches) and warm (after torch._dynamo.reset(), with the caches the cold
compile left on disk), compare compiled outputs and gradients with eager's, then
time eager against compiled for inference and for a training step (forward, loss,
backward, AdamW), and count the page faults of a forward. Runs on CUDA when torch
sees a GPU (bf16, larger), else on the CPU.
"""

import copy
import re
import resource
import time

import torch
import transformers
from torch._dynamo.utils import counters
from torch.profiler import profile
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}
torch.manual_seed(0)

# --8<-- [start:models]
# On a CPU, two layers of width 256 (a real model's code, a toy's size); on a GPU,
# four layers of width 1024 in bf16. Dropout is off: Inductor draws its random
# numbers differently from eager, so outputs could not be compared with it on.
on_cpu = device == "cpu"
width, layers, batch, seq, image = ((256, 2, 2, 64, 64) if on_cpu
                                   else (1024, 4, 8, 512, 224))
dtype = torch.float32 if on_cpu else torch.bfloat16
no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def text():  # token ids in, and the same ids as labels (the model shifts them)
    ids = torch.randint(0, 1000, (batch, seq), device=device)
    return {"input_ids": ids}, ids


def pixels():  # an image batch in, one class label per image
    images = torch.randn(batch, 3, image, image, device=device, dtype=dtype)
    return {"pixel_values": images}, torch.randint(0, 10, (batch,), device=device)


MODELS = {
    # A decoder with grouped-query attention: 8 query heads share 2 key/value heads.
    "Llama": (transformers.LlamaForCausalLM, transformers.LlamaConfig(
        vocab_size=1000, hidden_size=width, intermediate_size=2 * width,
        num_hidden_layers=layers, num_attention_heads=8, num_key_value_heads=2), text),
    "GPT-2": (transformers.GPT2LMHeadModel, transformers.GPT2Config(
        vocab_size=1000, n_embd=width, n_layer=layers, n_head=4, bos_token_id=0,
        eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0), text),
    "BERT": (transformers.BertForMaskedLM, transformers.BertConfig(
        vocab_size=1000, hidden_size=width, num_hidden_layers=layers,
        num_attention_heads=4, intermediate_size=4 * width, **no_dropout), text),
    "ViT": (transformers.ViTForImageClassification, transformers.ViTConfig(
        image_size=image, patch_size=16, hidden_size=width, num_hidden_layers=layers,
        num_attention_heads=4, intermediate_size=4 * width, num_labels=10,
        **no_dropout), pixels),
    # ResNet-18's blocks and channels (basic blocks, 64 to 512), one block a stage
    # on a CPU (ResNet-10): the convolutions' backward is most of a CPU compile.
    "ResNet": (transformers.ResNetForImageClassification, transformers.ResNetConfig(
        layer_type="basic", depths=[1, 1, 1, 1] if on_cpu else [2, 2, 2, 2],
        hidden_sizes=[64, 128, 256, 512],
        num_labels=10), pixels),
}
# --8<-- [end:models]
results["sizes"] = {"width": width, "layers": layers, "batch": batch, "seq": seq,
                    "image": image, "dtype": str(dtype)}


# --8<-- [start:steps]
def forward(model, inputs):
    return model(**inputs).logits


def train_step(model, optimizer, inputs, labels):
    optimizer.zero_grad(set_to_none=True)
    loss = model(**inputs, labels=labels).loss  # the library's own loss
    loss.backward()
    optimizer.step()
    return loss
# --8<-- [end:steps]


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


def time_first_call(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def largest_difference(a, b):
    return max((x.float() - y.float()).abs().max().item() for x, y in zip(a, b))


def faults_per_call(fn, *args, calls=50):
    """Minor page faults and the kernel's (system) milliseconds per call. A minor fault
    is the first touch of a page the OS has mapped but not yet backed: memory the
    allocator took from the OS since the last call. CPU time of this process only."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(calls):
        fn(*args)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"faults": (after.ru_minflt - before.ru_minflt) / calls,
            "system_ms": (after.ru_stime - before.ru_stime) / calls * 1e3}


def peak_bytes(fn, *args):  # what the step holds at its fullest; CUDA counts it
    if device != "cuda":
        return None
    torch.cuda.reset_peak_memory_stats()
    fn(*args)
    return torch.cuda.max_memory_allocated()


# --8<-- [start:compile]
def compile_and_time(model_class, config, make_inputs):
    model = model_class(config).to(device, dtype).eval()
    twin = copy.deepcopy(model)  # the compiled side gets its own copy to train
    inputs, labels = make_inputs()

    # Inference: compile cold, then again warm from the caches on disk.
    counters.clear()
    compiled = torch.compile(twin)
    with torch.no_grad():
        forward(model, inputs)  # eager's own first call, so it is not billed below
        eager_out = forward(model, inputs)
        out, cold_s = time_first_call(forward, compiled, inputs)
        graphs = counters["stats"]["unique_graphs"]
        breaks = dict(counters["graph_break"])
        torch._dynamo.reset()
        compiled = torch.compile(twin)
        out, warm_s = time_first_call(forward, compiled, inputs)

    # Training: one step each from the same weights, then compare loss and gradients.
    model.train(), twin.train()
    eager_opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled_opt = torch.optim.AdamW(twin.parameters(), lr=1e-4)
    eager_loss = train_step(model, eager_opt, inputs, labels)
    counters.clear()
    loss, train_s = time_first_call(train_step, compiled, compiled_opt, inputs, labels)
    train_graphs = counters["stats"]["unique_graphs"]
    train_breaks = dict(counters["graph_break"])
    grads = ([p.grad for p in model.parameters()], [p.grad for p in twin.parameters()])

    # Timed: inference, then the training step. Each mode was compiled above, so a
    # graph compiled while timing would be a recompile.
    counters.clear()
    model.eval(), twin.eval()
    with torch.no_grad():
        infer = measure({"eager": (forward, model, inputs),
                         "compiled": (forward, compiled, inputs)})
        # Counted at once: what malloc keeps changes with what the process frees.
        faults = {"eager": faults_per_call(forward, model, inputs),
                  "compiled": faults_per_call(forward, compiled, inputs)}
    model.train(), twin.train()
    train = measure({"eager": (train_step, model, eager_opt, inputs, labels),
                     "compiled": (train_step, compiled, compiled_opt, inputs, labels)})
    shares = {
        "train_eager": library_share(train_step, model, eager_opt, inputs, labels),
        "train_compiled": library_share(train_step, compiled, compiled_opt, inputs,
                                        labels)}
    model.eval(), twin.eval()
    with torch.no_grad():
        shares["inference_eager"] = library_share(forward, model, inputs)
        shares["inference_compiled"] = library_share(forward, compiled, inputs)
    model.train(), twin.train()
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "graphs": graphs, "breaks": sum(breaks.values()), "break_reasons": list(breaks),
        "train_graphs": train_graphs, "train_breaks": sum(train_breaks.values()),
        "train_break_reasons": list(train_breaks),
        "recompiles_timed": counters["stats"]["unique_graphs"],
        "cold_s": cold_s, "warm_s": warm_s, "train_cold_s": train_s,
        "output_diff": largest_difference([eager_out], [out]),
        "grad_diff": largest_difference(*grads),
        "loss_diff": abs(eager_loss.item() - loss.item()),
        "inference_eager": infer["eager"], "inference_compiled": infer["compiled"],
        "train_eager": train["eager"], "train_compiled": train["compiled"],
        "library_ms": shares, "inference_faults": faults,
        "peak_eager": peak_bytes(train_step, model, eager_opt, inputs, labels),
        "peak_compiled": peak_bytes(train_step, compiled, compiled_opt, inputs, labels),
    }
# --8<-- [end:compile]


# --8<-- [start:library]
# Matrix products, attention and convolutions are library calls (oneDNN, MKL, cuBLAS,
# cuDNN) eager or compiled: Inductor calls them too. Fusion can only shorten the rest.
LIBRARY = re.compile(r"aten::(addmm|mm|bmm|baddbmm|_scaled_dot_product_\w+"
                     r"|\w*convolution\w*)$|mkldnn::\w+")


def library_share(fn, *args, calls=3):
    """Milliseconds per call, under the profiler: in library calls, in every other
    op (a compiled graph's own kernels count here), and outside any op (the Python
    between ops, which the profiler does not see). Self times: on a CPU the host's, on
    a GPU the device's."""
    with profile() as prof:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        wall = (time.perf_counter() - start) * 1e6  # us, as the profiler counts
    own = {e.key: (e.self_device_time_total if device == "cuda"
                   else e.self_cpu_time_total) for e in prof.key_averages()}
    library = sum(t for key, t in own.items() if LIBRARY.match(key))
    ops = sum(own.values())
    return {"library": library / calls / 1e3, "rest": (ops - library) / calls / 1e3,
            "outside_ops": max(wall - ops, 0.0) / calls / 1e3}
# --8<-- [end:library]


# --8<-- [start:table]
# The first compile in a process also builds C++'s precompiled header and starts
# compile workers: pay that on something else, so the first model is not billed.
torch.compile(torch.sin)(torch.ones(4, device=device))
torch._dynamo.reset()
rows = {}
for name, spec in MODELS.items():
    rows[name] = compile_and_time(*spec)
    print(f"{name} compiled and timed", flush=True)


def ms(m):
    return m.median * 1e3


print(f"\n{'model':<7} {'params':>9} {'graphs':>6} {'breaks':>6} {'cold s':>7} "
      f"{'warm s':>6} {'train s':>7} {'|out diff|':>10} {'|grad diff|':>11}")
for name, r in rows.items():
    print(f"{name:<7} {r['parameters']:>9,} {r['graphs']:>6} {r['breaks']:>6} "
          f"{r['cold_s']:>7.1f} {r['warm_s']:>6.1f} {r['train_cold_s']:>7.1f} "
          f"{r['output_diff']:>10.1e} {r['grad_diff']:>11.1e}")
print(f"\n{'model':<7} {'infer eager':>11} {'compiled':>9} {'speed-up':>8} "
      f"{'train eager':>11} {'compiled':>9} {'speed-up':>8}   (median ms per call)")
for name, r in rows.items():
    infer = ms(r["inference_eager"]), ms(r["inference_compiled"])
    train = ms(r["train_eager"]), ms(r["train_compiled"])
    print(f"{name:<7} {infer[0]:>11.2f} {infer[1]:>9.2f} {infer[0] / infer[1]:>7.2f}x "
          f"{train[0]:>11.2f} {train[1]:>9.2f} {train[0] / train[1]:>7.2f}x")
print("\nms per call, profiled: library calls (matmul, attention, convolution), "
      "other ops, outside any op; eager -> compiled")
for name, r in rows.items():
    for step in ("inference", "train"):
        split = r["library_ms"]
        eager, compiled = split[f"{step}_eager"], split[f"{step}_compiled"]
        print(f"{name:<7} {step:<9}" + ",".join(
            f" {eager[part]:6.2f} -> {compiled[part]:6.2f}"
            for part in ("library", "rest", "outside_ops")))
print("\npage faults per forward (kernel ms per forward), eager -> compiled")
for name, r in rows.items():
    eager, compiled = r["inference_faults"]["eager"], r["inference_faults"]["compiled"]
    print(f"{name:<7} {eager['faults']:7.0f} ({eager['system_ms']:5.2f}) -> "
          f"{compiled['faults']:7.0f} ({compiled['system_ms']:5.2f})")
if device == "cuda":
    print("\npeak memory of a training step, eager -> compiled (MiB):")
    for name, r in rows.items():
        eager, compiled = r["peak_eager"] / 2**20, r["peak_compiled"] / 2**20
        print(f"{name:<7} {eager:8.1f} -> {compiled:8.1f}")
# --8<-- [end:table]
results["models"] = rows
