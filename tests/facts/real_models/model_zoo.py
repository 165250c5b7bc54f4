"""The check of snippets/real_models/model_zoo.py: what real-models.md says about it, held on every record of it."""

from facts import check, timed

MODELS = ("Llama", "GPT-2", "BERT", "ViT", "ResNet")


@check("real_models/model_zoo.py")
def _(record):
    models = record.results["models"]
    assert tuple(models) == MODELS, list(models)
    # The page's sizes on a CPU: two layers of width 256, two sequences of 64 tokens or two 64 x 64 images.
    if record.device == "cpu":
        sizes = record.results["sizes"]
        assert (sizes["layers"], sizes["width"], sizes["batch"], sizes["seq"], sizes["image"]) == (2, 256, 2, 64, 64)
    for name, row in models.items():
        # Each model's forward compiles whole: one graph, no break.
        assert (row["graphs"], row["breaks"]) == (1, 0), (name, row["break_reasons"])
        # The training step too, but GPT-2's: transformers' loss property calls logger.warning_once for a class
        # name its loss table does not know (GPT2LMHeadModel), and Dynamo breaks the graph at a logger call.
        if name == "GPT-2":
            assert row["train_graphs"] == 2 and row["train_breaks"] >= 1, (name, row["train_graphs"])
            assert all("logging.Logger" in reason or "Logger" in reason for reason in row["train_break_reasons"]), \
                row["train_break_reasons"]
        else:
            assert (row["train_graphs"], row["train_breaks"]) == (1, 0), (name, row["train_break_reasons"])
        # Nothing compiled again after the first steps, but once for the two image classifiers: their loss sets
        # config.problem_type on its first call, and the second training step fails the guard on it.
        assert row["recompiles_timed"] == (1 if name in ("ViT", "ResNet") else 0), (name, row["recompiles_timed"])
        # Compiled computes what eager does: outputs, the loss and every gradient agree to float32 rounding
        # (bf16 on a GPU rounds at about 8e-3 relative).
        tolerance = 1e-4 if record.device == "cpu" else 5e-2
        for key in ("output_diff", "grad_diff", "loss_diff"):
            assert row[key] < tolerance, (name, key, row[key])
        # The warm start reuses the caches the cold compile left: it is faster than the cold compile.
        assert row["warm_s"] < row["cold_s"], (name, row["cold_s"], row["warm_s"])
        timed(row, ("inference_eager", "inference_compiled", "train_eager", "train_compiled"))
        # The profile split each call into library calls, other ops and time outside any op.
        for key, split in row["library_ms"].items():
            assert split["library"] > 0 and split["rest"] > 0 and split["outside_ops"] >= 0, (name, key, split)
        # Peak memory is read on a GPU only.
        measured = row["peak_eager"] is not None and row["peak_compiled"] is not None
        assert measured == (record.device == "cuda"), (name, row["peak_eager"])
    # The page faults of a forward, counted right after the timing: the compiled ResNet's, which copies its
    # weights into new buffers at every call, outnumber its eager forward's (the page's reading of its row), in
    # the median process of a committed record. malloc's state decides it, so a fresh run is not judged.
    resnet = models["ResNet"]
    if record.device == "cpu" and len(resnet["inference_compiled"].get("process_medians_us") or []) > 1:
        assert resnet["inference_faults"]["compiled"]["faults"] > resnet["inference_faults"]["eager"]["faults"], \
            resnet["inference_faults"]
    # The table's ResNet forward, compiled, was slower than eager in every process of a committed record (the
    # page reads its row as a loss). A fresh run is one process, timed while the suite runs beside it: not judged.
    eager = resnet["inference_eager"].get("process_medians_us") or []
    compiled = resnet["inference_compiled"].get("process_medians_us") or []
    if len(eager) > 1 and len(compiled) > 1:
        assert min(compiled) > max(eager), (min(compiled), max(eager))
