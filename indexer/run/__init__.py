"""One indexing run and what it writes: the orchestration (pipeline.py), each source's run
(source_run/), what the new version's files are and how they are written (storage/: dense
segments streamed and compacted, the copy-on-write text index, garbage collection, a full
disk), the published version, recovery from damage, and the writer lock."""
