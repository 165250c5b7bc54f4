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
    assert ddp["ops_ddp_optimizer"] == [4, 4, 2], ddp
    # Compiling the wrapper, torch.compile(DDP(model)), of a model whose forward is its own code: the same three
    # graphs, cut the same way (the model's frame is compiled while DDP is active, so DDPOptimizer splits it).
    # The same layers as a bare nn.Sequential: no graph (torch.nn's own frames are never compiled alone).
    assert ddp["graphs_compile_ddp"] == 3 and ddp["ops_compile_ddp"] == [4, 4, 2], ddp
    assert ddp["graphs_compile_ddp_sequential"] == 0, ddp
    # Every compiled step ends with the eager DDP step's parameters, on both ranks, and the ranks agree.
    assert ddp["same_off"] and ddp["same_ddp_optimizer"] and ddp["same_compile_ddp"], ddp
    assert ddp["same_compile_ddp_sequential"], ddp
    assert ddp["ranks_agree"], ddp
    # DDP's own buckets in the second step, after its rebuild: bucket_cap_mb=2 caps the first bucket too, so
    # the last two layers, the next two, then the first, in the order all-reduced; DDPOptimizer's pieces are
    # the last layer alone, then two by two (ops [4, 4, 2] front first), so they do not line up. Around the
    # compiled model DDP's first bucket again holds more than the last layer (part of the second piece too).
    layer = ddp["layer_bytes"]
    assert layer == (512 * 512 + 512) * 4, ddp
    assert ddp["buckets_bytes"] == [2 * layer, 2 * layer, layer], ddp
    compiled = ddp["buckets_bytes_ddp_optimizer"]
    assert sum(compiled) == 5 * layer and compiled[0] > layer, ddp
    # FSDP2 ran on gloo on the CPU, eagerly and compiled, and ended with the same parameters as eager DDP.
    # Compiled whole, it handed Inductor a graph per block's forward (a linear layer and a ReLU, two ops): one
    # for the first block, one the other blocks reuse (their input needs a gradient).
    fsdp2 = results["fsdp2"]
    assert fsdp2["fsdp2"]["ran"] and fsdp2["fsdp2"]["same"], fsdp2
    assert fsdp2["fsdp2_compiled"]["ran"] and fsdp2["fsdp2_compiled"]["same"], fsdp2
    assert fsdp2["fsdp2_compiled"]["graphs"] == 2 and fsdp2["fsdp2_compiled"]["ops"] == [2, 2], fsdp2
    # Checkpointing inside the compiled module: one graph, no break, the checkpointed blocks as the
    # tag_activation_checkpoint higher-order op, and the gradients of the uncheckpointed model. The partitioner
    # recomputes one matmul per block in the backward graph (the first, whose output GELU's gradient needs):
    # the forward has the same matmuls either way, the backward two more with checkpointing.
    checkpoint = results["checkpoint"]
    assert {k: checkpoint[k] for k in ("graphs", "breaks", "ops", "same")} == {
        "graphs": 1, "breaks": 0, "ops": ["tag_activation_checkpoint"], "same": True}, checkpoint
    plain, checkpointed = checkpoint["matmuls"]["plain"], checkpoint["matmuls"]["checkpointed"]
    assert plain["forward"] == checkpointed["forward"] == 4, checkpoint
    assert checkpointed["backward"] - plain["backward"] == 2, checkpoint
