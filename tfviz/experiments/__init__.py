"""What-ifs that run a model, one idea per file. The shared model is only ever read.

    padding.py    run sentences as one padded batch; the pads change no real token's logits
    peeking.py    change a later token; a decoder's earlier positions do not move at all
    order.py      a model without positions is order-blind: reorder the tokens, outputs follow
    rope.py       RoPE with the engine's own rotation: q·k depends only on the distance
    relative.py   Shaw et al.'s position terms q·a^K over a batch of texts (lesson 3)
    wiring.py     fresh post-LN and pre-LN twins of a model, to compare their residual streams
    masked.py     a BERT-style model reads [MASK] in place of one token
    kv_cache.py   generate with and without the KV cache: ids, rows and per-step times compared
    kv_cache_lengths.py  one cached and one uncached step timed at growing lengths (lesson 16)
    gqa_decode.py  decode time per new token for MHA, GQA and MQA, with their cache bytes (lesson 18)
    long_sequences.py  attention's cost as n grows, sparse patterns on a trained model, Linformer

Everything that only reads a finished trace or the exported weights lives in
``tfviz/analysis`` (pure numpy); everything here calls a model.
"""
