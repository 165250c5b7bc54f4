"""A ResNet compiled on a CPU, and where its time goes: the weights Inductor copies
into channels-last at every call, and the memory those copies take from the OS.

    python snippets/real_models/resnet_layout.py

Builds the model chapter's ResNet from transformers' config (random weights, nothing
downloaded), compiles its forward four ways (as it is, with the layout optimization
off, with its weights stored channels-last, frozen) and times each against eager,
counting the page faults of a compiled forward; then compiles it as it is again with
glibc's malloc told to keep the memory it frees. Runs on CUDA when torch sees a GPU
(bf16, larger), else on the CPU, where the malloc part runs.
"""

import copy
import ctypes
import resource

import torch
import transformers
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}
torch.manual_seed(0)

# --8<-- [start:model]
# The chapter's ResNet: ResNet-18's basic blocks and channels (64 to 512), one block a
# stage on a CPU; a batch of two 64 x 64 images (eight 224 x 224 in bf16 on a GPU).
on_cpu = device == "cpu"
batch, image, dtype = (2, 64, torch.float32) if on_cpu else (8, 224, torch.bfloat16)
config = transformers.ResNetConfig(
    layer_type="basic", depths=[1, 1, 1, 1] if on_cpu else [2, 2, 2, 2],
    hidden_sizes=[64, 128, 256, 512], num_labels=10)
model = transformers.ResNetForImageClassification(config).to(device, dtype).eval()
images = torch.randn(batch, 3, image, image, device=device, dtype=dtype)


def forward(model, images):
    return model(pixel_values=images).logits
# --8<-- [end:model]


results["sizes"] = {"batch": batch, "image": image, "dtype": str(dtype)}


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


def ms(m):
    return m.median * 1e3


def largest_difference(a, b):
    return (a.float() - b.float()).abs().max().item()


# --8<-- [start:faults]
def faults_per_call(fn, *args, calls=50):
    """Minor page faults, and the kernel's CPU milliseconds (system time, summed over
    the threads), per call. A minor fault is the first touch of a page the OS has
    mapped but not yet backed: memory the allocator took from the OS since the last
    call."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(calls):
        fn(*args)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"faults": (after.ru_minflt - before.ru_minflt) / calls,
            "system_ms": (after.ru_stime - before.ru_stime) / calls * 1e3}
# --8<-- [end:faults]


# The first compile in a process also builds C++'s precompiled header and starts
# compile workers: pay that on something else, so the first variant is not billed.
torch.compile(torch.sin)(torch.ones(4, device=device))

# --8<-- [start:layout]
# Inductor lays a graph with convolutions out channels-last (its layout_optimization).
# Unfrozen, the weights are the graph's inputs, kept as the model stores them (NCHW),
# so every call first copies each weight that is not already channels-last (every
# kernel larger than 1 x 1) into a new buffer. Three ways round it: keep the model's
# layout, store the weights channels-last, or freeze them (constants, laid out once at
# compile time, each batch norm folded into its convolution's weights).
relaid = [p for p in model.parameters()
          if p.dim() == 4 and not p.is_contiguous(memory_format=torch.channels_last)]
relaid_mb = sum(p.numel() * p.element_size() for p in relaid) / 1e6
print(f"weights copied per call, unfrozen: {len(relaid)} tensors, {relaid_mb:.1f} MB "
      f"read and as many written")
VARIANTS = {  # name: (the model compiled, Inductor's settings while it compiles)
    "compiled": (model, {}),
    "kept_layout": (model, {"layout_optimization": False}),
    "channels_last": (copy.deepcopy(model).to(memory_format=torch.channels_last), {}),
    "frozen": (model, {"freezing": True}),
}
timed, differences, faults = {}, {}, {}
with torch.no_grad():
    eager_out = forward(model, images)
    for name, (source, setting) in VARIANTS.items():
        torch._dynamo.reset()  # compiled anew, and timed while its graph is the one
        compiled = torch.compile(copy.deepcopy(source))
        with torch._inductor.config.patch(setting):  # read when a call compiles
            differences[name] = largest_difference(eager_out, forward(compiled, images))
            timed[name] = measure({"eager": (forward, model, images),
                                   "compiled": (forward, compiled, images)})
            faults[name] = faults_per_call(forward, compiled, images)
print(f"{'compiled as':<13} {'ms per forward (eager)':>22} "
      f"{'page faults (kernel ms)':>24} {'|out diff|':>11}")
for name, pair in timed.items():
    print(f"{name:<13} {ms(pair['compiled']):14.2f} ({ms(pair['eager']):5.2f}) "
          f"{faults[name]['faults']:16.0f} ({faults[name]['system_ms']:5.2f}) "
          f"{differences[name]:11.1e}")
# --8<-- [end:layout]
results["layouts"] = {
    "relaid": len(relaid), "relaid_mb": relaid_mb, "differences": differences,
    "timed": timed, "faults": faults,
    "channels_last_relaid": sum(
        not p.is_contiguous(memory_format=torch.channels_last)
        for p in VARIANTS["channels_last"][0].parameters() if p.dim() == 4)}

# --8<-- [start:allocator]
# A compiled call allocates its buffers anew (the weight copies among them) and frees
# each after its last use. When the free memory at the top of glibc's heap exceeds its
# trim limit, malloc hands it back to the OS, so the next call touches fresh pages that
# the kernel must map and zero: minor page faults. glibc raises that limit as the
# process frees large blocks, so some processes are spared. Told to keep up to 256 MB
# and to serve blocks up to 32 MB from its heap, malloc reuses the memory at every
# later call. Set both: setting either stops glibc adjusting both. The environment
# variables MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ do the same from outside.
# glibc only; on a GPU, torch's caching allocator keeps device memory already.
libc = ctypes.CDLL(None)
if on_cpu and hasattr(libc, "mallopt"):
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # from glibc's <malloc.h>
    kept = bool(libc.mallopt(M_TRIM_THRESHOLD, 256 << 20)
                and libc.mallopt(M_MMAP_THRESHOLD, 32 << 20))
    torch._dynamo.reset()
    compiled = torch.compile(copy.deepcopy(model))  # the default compile again
    with torch.no_grad():
        kept_difference = largest_difference(eager_out, forward(compiled, images))
        kept_timed = measure({"eager": (forward, model, images),
                              "compiled": (forward, compiled, images)})
        kept_faults = faults_per_call(forward, compiled, images)
    print(f"malloc keeps its memory ({'set' if kept else 'refused'}): compiled "
          f"{ms(kept_timed['compiled']):.2f} ms per forward (eager's "
          f"{ms(kept_timed['eager']):.2f}), {kept_faults['faults']:.0f} page faults "
          f"({kept_faults['system_ms']:.2f} ms in the kernel)")
# --8<-- [end:allocator]
if on_cpu and hasattr(libc, "mallopt"):
    results["allocator"] = {"set": kept, "timed": kept_timed, "faults": kept_faults,
                            "difference": kept_difference}
