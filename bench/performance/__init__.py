"""Performance benchmarks (`just bench`): indexing, pushes, queries, serving, scale; each
figure with a target is a ratio or a count measured in the same run as its reference."""
