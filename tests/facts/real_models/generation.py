"""The check of snippets/real_models/generation.py: what real-models.md says about it, held on every record of
it."""

from facts import check, timed

VARIANTS = ("eager", "compiled", "compiled_dynamic", "compiled_marked", "compiled_static")


@check("real_models/generation.py")
def _(record):
    results = record.results
    compiles = results["compiles"]
    # The page's prompts: 16 tokens, then a longer one.
    assert results["sizes"]["prompts"]["first"] == 16 < results["sizes"]["prompts"]["longer"], results["sizes"]
    # Greedy decoding: every compiled variant generates eager's tokens, for both prompts.
    assert results["same_tokens"] == dict.fromkeys(VARIANTS, True), results["same_tokens"]
    # Eager compiles nothing; each compiled variant compiles on its first sequence.
    assert compiles["eager|first"] == compiles["eager|longer"] == 0, compiles
    for name in VARIANTS[1:]:
        assert compiles[f"{name}|first"] >= 1, (name, compiles)
    # The longer prompt: the default (automatic dynamic) compiles again; dynamic=True does not.
    assert compiles["compiled|longer"] >= 1, compiles
    assert compiles["compiled_dynamic|longer"] == 0, compiles
    # Marking only the sequence dimension dynamic does the same for this model: the longer prompt compiles nothing.
    assert compiles["compiled_marked|longer"] == 0, compiles
    for name in VARIANTS[1:]:
        timed(results["per_sequence"][name], ("eager", "compiled"))
