"""Training the bundled models from scratch, on data our own code generates.

- ``tokenizers``: the shared story BPE (reverse-encdec reads letters: ``tfviz.tokenizer.task``)
- ``batches``: rows of ids -> padded tensors for next-token, masked-LM and seq2seq training
- ``objectives``: one loss function per objective
- ``recipes``: per preset: data, steps, learning rate, held-out evaluation
- ``loop``: ``fit(recipe)``, the seeded training loop
- ``evaluate`` / ``routing``: the numbers the manifest records
- ``save``: ``write_bundle`` -> assets/<name>/{config,model,tokenizer,manifest}

The command-line entry point is ``python -m tfviz.train`` (see tfviz/train.py).
"""
