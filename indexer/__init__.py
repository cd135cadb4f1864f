"""The writing side, the only writer of the index: a run (run/) over sources (sources/),
chunked markdown (chunking/) and git (git/), started by triggers (triggers/)."""
