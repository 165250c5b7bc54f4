# ruff: noqa  (user code as users write it: the held-out set's source, not this project's style)
"""Realistic user code, modelled on public issue threads and common model code, that breaks the graph or
recompiles. tests/atlas_heldout/make.py runs it on a torch release
and writes the messages it logs; heldout.json holds those of torch 2.15 and 2.11, as users paste them."""
import copy, datetime, hashlib, io, json, logging, os, pickle, random, socket, subprocess, time, uuid, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger("trainer")
logger.setLevel(logging.INFO)
S = {}  # name -> (callable making the call, expected case or None, source)


def scenario(name, expect, source):
    def wrap(fn):
        S[name] = (fn, expect, source)
        return fn
    return wrap


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, hidden_states, attention_mask):
        if (attention_mask == 0).all():
            raise ValueError("Attention mask is all zeros: every token is padding")
        q, k, v = self.qkv(hidden_states).chunk(3, -1)
        return F.scaled_dot_product_attention(q, k, v)


@scenario("hf_mask_all_zero", "mask_check", "Hugging Face style attention-mask validation")
def _():
    m = Attention()
    return lambda c: c(m)(torch.randn(1, 4, 8), torch.ones(1, 4))


def maybe_align(x, alignment_in_bytes=16):
    return x if x.data_ptr() % alignment_in_bytes == 0 else x.clone()


@scenario("flash_attn_align", "data_ptr", "pytorch/pytorch#128071 (flash-attn layer_norm maybe_align)")
def _():
    return lambda c: c(lambda x: maybe_align(x) * 2)(torch.randn(8))


@scenario("moe_tolist", "tolist", "PrimeIntellect-ai/prime-rl#996 (MoE tokens per expert)")
def _():
    def run_experts(x, num_tokens_per_expert):
        out = []
        for n in num_tokens_per_expert.tolist():
            out.append(x[: int(n)].sum())
        return torch.stack(out)
    return lambda c: c(run_experts)(torch.randn(8, 4), torch.tensor([2.0, 3.0]))


@scenario("class_in_forward", "class_inside", "pytorch/pytorch#161562 (class defined in a compiled function)")
def _():
    def fn(x):
        class Foo:
            def __init__(self, x):
                self.x = x
        return Foo(x).x - 1
    return lambda c: c(fn)(torch.tensor([1.0]))


@scenario("copy_block", "copy_module", "copy.copy of a submodule in forward")
def _():
    block = nn.Linear(4, 4)
    return lambda c: c(lambda x: copy.copy(block)(x))(torch.randn(2, 4))


@scenario("loss_item_log", "item", "a training step that logs loss.item()")
def _():
    def step(pred, target):
        loss = F.mse_loss(pred, target)
        running = loss.item()
        return loss * running
    return lambda c: c(step)(torch.randn(4), torch.randn(4))


@scenario("print_loss", "print_text", "print in a training step")
def _():
    def step(x):
        print("computing loss")
        return (x ** 2).mean()
    return lambda c: c(step)(torch.randn(4))


@scenario("logger_debug_shape", "logger_info", "logger.info in a model's forward")
def _():
    def fwd(x):
        logger.info("input shape %s", tuple(x.shape))
        return x.relu()
    return lambda c: c(fwd)(torch.randn(4))


@scenario("deprecation_warning", "warnings_warn", "warnings.warn in a layer")
def _():
    def fwd(x):
        warnings.warn("this layer is deprecated, use NewLayer", DeprecationWarning)
        return x * 3
    return lambda c: c(fwd)(torch.randn(4))


@scenario("perf_counter", "time_time", "time.perf_counter in forward")
def _():
    def fwd(x):
        t0 = time.perf_counter()
        y = x.sin()
        return y
    return lambda c: c(fwd)(torch.randn(4))


@scenario("sha256_cache_key", "hashlib_md5", "hashlib in a caching layer")
def _():
    def fwd(x):
        key = hashlib.sha256(b"layer-0").hexdigest()
        return x + len(key)
    return lambda c: c(fwd)(torch.randn(4))


@scenario("pickle_loads", "pickle_dumps", "pickle in forward")
def _():
    blob = pickle.dumps({"scale": 2})
    def fwd(x):
        return x * pickle.loads(blob)["scale"]
    return lambda c: c(fwd)(torch.randn(4))


@scenario("np_random_noise", "numpy_random", "NumPy noise in augmentation")
def _():
    def aug(x):
        return x + np.random.randn() * 0.1
    return lambda c: c(aug)(torch.randn(4))


@scenario("seed_in_forward", "manual_seed", "torch.manual_seed inside a compiled function")
def _():
    def fwd(x, seed=1234):
        torch.manual_seed(seed)
        return F.dropout(x, 0.5)
    return lambda c: c(fwd)(torch.randn(4))


@scenario("where_single_arg", "nonzero", "torch.where(mask) with one argument")
def _():
    return lambda c: c(lambda x: torch.where(x > 0)[0])(torch.randn(8))


@scenario("masked_loss", "boolean_mask", "a loss over masked positions")
def _():
    def loss(pred, labels):
        valid = labels != -100
        return pred[valid]
    return lambda c: c(loss)(torch.randn(8), torch.tensor([1, -100, 2, 3, -100, 1, 1, 0]))


@scenario("unique_labels", "unique", "torch.unique on labels")
def _():
    return lambda c: c(lambda y: torch.unique(y))(torch.tensor([1, 2, 2, 3]))


@scenario("normalise_if_255", "if_on_tensor", "if on an image tensor's max")
def _():
    def prep(img):
        if img.max() > 1:
            img = img / 255
        return img
    return lambda c: c(prep)(torch.rand(3, 4) * 255)


@scenario("zeros_of_max_len", "size_from_value", "a buffer sized by int(lengths.max())")
def _():
    def pad(lengths):
        return torch.zeros(int(lengths.max()), 4)
    return lambda c: c(pad)(torch.tensor([3.0, 5.0]))


@scenario("param_in_forward", "parameter_inside", "nn.Parameter made in forward")
def _():
    def fwd(x):
        w = nn.Parameter(torch.ones(4))
        return x * w
    return lambda c: c(fwd)(torch.randn(4))


@scenario("train_step_backward", "backward_inside", "loss.backward() in a compiled train step")
def _():
    model = nn.Linear(4, 1)
    def step(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss.detach()
    return lambda c: c(step)(torch.randn(2, 4))


@scenario("gradient_penalty", "autograd_grad", "a WGAN-GP gradient penalty")
def _():
    critic = nn.Linear(4, 1)
    def gp(x):
        out = critic(x)
        g = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
        return ((g.norm(2, dim=1) - 1) ** 2).mean()
    return lambda c: c(gp)(torch.randn(2, 4, requires_grad=True))


@scenario("full_backward_hook", "module_backward_hook", "a gradient-logging backward hook")
def _():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    m[0].register_full_backward_hook(lambda mod, gi, go: None)
    return lambda c: c(m)(torch.randn(2, 4, requires_grad=True))


@scenario("disabled_helper", "compiler_disable", "a helper under torch.compiler.disable")
def _():
    @torch.compiler.disable
    def postprocess(x):
        return x.softmax(-1)
    return lambda c: c(lambda x: postprocess(x) * 2)(torch.randn(4))


@scenario("datetime_stamp", "datetime_now", "a timestamp taken in forward")
def _():
    def fwd(x):
        stamp = datetime.datetime.now()
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


@scenario("sparse_adjacency", "to_sparse", "a sparse adjacency matrix in a GNN layer")
def _():
    def layer(adj, h):
        return torch.sparse.mm(adj.to_sparse(), h)
    return lambda c: c(layer)(torch.eye(4), torch.randn(4, 2))


@scenario("generator_dropout", "torch_generator", "torch.rand with a Generator")
def _():
    g = torch.Generator().manual_seed(0)
    return lambda c: c(lambda x: x * (torch.rand(x.shape, generator=g) > 0.5))(torch.randn(4))


@scenario("repr_in_assert", "repr_of_tensor", "repr of a tensor in an error message")
def _():
    def fwd(x):
        msg = "got " + repr(x)
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


@scenario("np_polyfit", "numpy_interp", "np.polyfit on a tensor's values")
def _():
    def fit(y):
        coef = np.polyfit(np.arange(4.0), y.numpy(), 1)
        return torch.from_numpy(coef)
    return lambda c: c(fit)(torch.randn(4))


@scenario("hostname_tag", None, "socket.gethostname in forward: no case")
def _():
    def fwd(x):
        host = socket.gethostname()
        return x + len(host)
    return lambda c: c(fwd)(torch.randn(4))


@scenario("uuid_tag", None, "uuid.uuid4 in forward: no case")
def _():
    def fwd(x):
        run_id = uuid.uuid4()
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


@scenario("json_config", None, "json.dumps of a config in forward: no case")
def _():
    def fwd(x):
        s = json.dumps({"a": 1})
        return x + len(s)
    return lambda c: c(fwd)(torch.randn(4))


@scenario("subprocess_call", None, "subprocess in forward: no case")
def _():
    def fwd(x):
        subprocess.run(["true"])
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


@scenario("getenv_rank", None, "os.environ lookup: traced, or no case")
def _():
    def fwd(x):
        return x * int(os.environ.get("LOCAL_RANK", "0") == "0")
    return lambda c: c(fwd)(torch.randn(4))


@scenario("sorted_set_names", None, "a generator expression over a dict's items with a lambda key")
def _():
    def fwd(x):
        return x * len(set(map(str, range(3))))
    return lambda c: c(fwd)(torch.randn(4))


@scenario("tensor_hook_print", "print_tensor", "print a tensor in forward")
def _():
    def fwd(x):
        y = x.exp()
        print(y)
        return y
    return lambda c: c(fwd)(torch.randn(4))


@scenario("storage_size", "untyped_storage", "memory accounting by storage size")
def _():
    def fwd(x):
        return x.sum() + x.untyped_storage().size()
    return lambda c: c(fwd)(torch.randn(4))


@scenario("resize_buffer", "resize_inside", "a buffer grown with resize_")
def _():
    def fwd(x):
        buf = torch.empty(0)
        buf.resize_(x.numel())
        return buf.copy_(x)
    return lambda c: c(fwd)(torch.randn(4))


@scenario("open_vocab", "open_file", "a vocabulary read in forward")
def _():
    def fwd(x):
        with open(os.devnull) as f:
            f.read()
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


@scenario("threads_in_forward", "set_num_threads", "thread count set in forward")
def _():
    def fwd(x):
        torch.set_num_threads(2)
        return x + 1
    return lambda c: c(fwd)(torch.randn(4))


# Recompiles.
R = {}


def recompile(name, expect, source):
    def wrap(fn):
        R[name] = (fn, expect, source)
        return fn
    return wrap


@recompile("train_eval_toggle", None, "model.train() then model.eval(): no case")
def _():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
    def run(c):
        f = c(lambda x: m(x))
        f(torch.randn(2, 4)); m.eval(); f(torch.randn(2, 4))
    return run


@recompile("mask_none_then_tensor", None, "attention_mask None, then a tensor: no case")
def _():
    def attn(x, attention_mask=None):
        return x if attention_mask is None else x * attention_mask
    def run(c):
        f = c(attn)
        f(torch.randn(2, 4)); f(torch.randn(2, 4), torch.ones(2, 4))
    return run


@recompile("stride_change", None, "a transposed input: no case")
def _():
    def run(c):
        f = c(lambda x: x * 2)
        f(torch.randn(4, 4)); f(torch.randn(4, 4).t())
    return run


@recompile("lr_schedule", "float_arg", "a learning rate as a float argument")
def _():
    def sgd(p, g, lr):
        return p - lr * g
    def run(c):
        f = c(sgd)
        p, g = torch.randn(4), torch.randn(4)
        f(p, g, 0.1); f(p, g, 0.05)
    return run


@recompile("batch_sizes", "size", "the last batch smaller")
def _():
    m = nn.Linear(4, 2)
    def run(c):
        f = c(lambda x: m(x))
        f(torch.randn(32, 4)); f(torch.randn(17, 4))
    return run


@recompile("half_inputs", "dtype", "float32 then float16 inputs")
def _():
    def run(c):
        f = c(lambda x: x.relu())
        f(torch.randn(4)); f(torch.randn(4).half())
    return run


@recompile("eval_under_no_grad", "grad_mode", "validation under torch.no_grad")
def _():
    m = nn.Linear(4, 2)
    def run(c):
        f = c(lambda x: m(x))
        f(torch.randn(2, 4))
        with torch.no_grad():
            f(torch.randn(2, 4))
    return run


@recompile("layer_index", "module_int", "a layer index on each block")
def _():
    class Block(nn.Module):
        def __init__(self, i):
            super().__init__()
            self.layer_idx = i
        def forward(self, x):
            return x * (self.layer_idx + 1)
    blocks = [Block(i) for i in range(3)]
    def run(c):
        f = c(lambda b, x: b(x))
        for b in blocks:
            f(b, torch.randn(4))
    return run
