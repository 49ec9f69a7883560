"""Nothing here seeds the random generators for every test: that would hide whether code is
deterministic by itself. Models seed their own weights (``ModelConfig.init_seed``), library
code takes explicit generators, and a test that draws random numbers seeds them itself."""

import torch

# One thread per torch op, as the app's server runs them (tfviz.ui.warmup.one_thread_per_op).
# Set before any test, so every number a worker computes comes from the same kernels: the
# first AppTest of a worker would otherwise switch it from two threads to one halfway. The
# suite runs two workers on two cores, so more threads per op would only compete.
torch.set_num_threads(1)
