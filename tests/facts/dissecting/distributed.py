"""The check of snippets/dissecting/distributed.py: what dissecting/distributed.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/distributed.py")
def _(record):
    results = record.results
    ddp = results["ddp"]
    # optimize_ddp=False: Dynamo's one graph goes to Inductor whole; "ddp_optimizer" splits it at the bucket
    # boundaries DDPOptimizer computes (the last layer alone in a 1 MiB first bucket, then two layers to each
    # 2 MiB bucket): three graphs, the front of the model first.
    assert ddp["graphs_off"] == 1 and ddp["graphs_ddp_optimizer"] == 3, ddp
    assert record.section("ddp").count("(ops each: [4, 4, 2])") == 1, record.section("ddp")
    # Compiling the wrapper, torch.compile(DDP(model)), hands Inductor no graph: DDP's forward calls
    # _inside_ddp_forward, which Dynamo skips, and the model then runs eagerly.
    assert ddp["graphs_compile_ddp"] == 0, ddp
    # Every compiled step ends with the eager DDP step's parameters, on both ranks, and the ranks agree.
    assert ddp["same_off"] and ddp["same_ddp_optimizer"] and ddp["same_compile_ddp"], ddp
    assert ddp["ranks_agree"], ddp
    # DDP's own buckets on these two steps: the one bucket it starts with (no rebuild happened), which the page
    # contrasts with DDPOptimizer's three.
    assert ddp["buckets"] == 1 and ddp["buckets_bytes"] == [5253120], ddp
    # FSDP2 ran on gloo on the CPU and ended with the same parameters as eager DDP.
    assert results["fsdp2"] == {"ran": True, "same": True}, results["fsdp2"]
    # Checkpointing inside the compiled module: one graph, no break, the checkpointed blocks as the
    # tag_activation_checkpoint higher-order op, and the gradients of the uncheckpointed model.
    assert results["checkpoint"] == {"graphs": 1, "breaks": 0, "ops": ["tag_activation_checkpoint"],
                                     "same": True}, results["checkpoint"]
