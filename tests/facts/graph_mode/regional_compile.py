"""The check of snippets/graph_mode/regional_compile.py: what dissecting/compile-time.md says about it, held on
every record of it."""

from facts import check, timed


@check("graph_mode/regional_compile.py")
def _(record):
    results = record.results
    depths = results["depths"]
    whole, regional = results["first_call"]["whole"], results["first_call"]["regional"]
    block_ops = regional["ops"][0]
    # Compiled whole: one frame, one graph at every N, holding every block's ops: N times one block's.
    assert whole["frames"] == whole["graphs"] == [1] * len(depths), whole
    assert whole["ops"] == [n * block_ops for n in depths], (whole["ops"], block_ops)
    # Compiled regionally: one frame and one graph of one block's ops at every N. The other blocks' calls
    # reuse the first block's compiled code: Dynamo compiles no frame for them.
    assert regional["frames"] == regional["graphs"] == [1] * len(depths), regional
    assert regional["ops"] == [block_ops] * len(depths), regional
    # Every timed compile did its graph work: none was loaded from the FX graph cache.
    assert all(hits == 0 for way in (whole, regional) for hits in way["graph_cache_hits"])
    # The untimed warm-up built every kernel: one block's, then what each whole stack fuses across the
    # boundaries between its blocks (one block compiled whole needs no more). No timed compile runs a compiler.
    built = results["warm_up"]["whole_compilers"]
    assert built[0] == 0 and sum(built[1:]) >= 1, built
    assert regional["compilers"] == whole["compilers"] == [0] * len(depths), (whole, regional)
    if record.committed:  # the recorder starts every process with empty compiler caches
        assert results["warm_up"]["compilers"] >= 1, results["warm_up"]
    assert results["matches_eager"]
    # New batch sizes (4, 8, 16) through regionally compiled blocks: automatic dynamic shapes compile a
    # second, dynamic graph at the second size and reuse it for the third; dynamic=False compiles each size.
    assert results["batches"] == [4, 8, 16]
    assert results["graphs_after"] == {"None": [1, 2, 2], "False": [1, 2, 3]}, results["graphs_after"]
    assert results["threads"] == 1
    for timings in results["timing"].values():
        timed(dict(enumerate(timings)), range(len(depths)))
    for way, firsts in results["compile"].items():
        assert len(firsts) == len(depths) and all(t["median_us"] > 0 for t in firsts), way
