"""Nothing here seeds the random generators for every test: that would hide whether code is
deterministic by itself. Models seed their own weights (``ModelConfig.init_seed``), library
code takes explicit generators, and a test that draws random numbers seeds them itself."""
