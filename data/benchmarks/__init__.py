"""Benchmarks: the catalog and registry of loaders, where records come from, splits and partitions,
the gold check, the answer-format blocks for prompts, and one module per benchmark family."""
