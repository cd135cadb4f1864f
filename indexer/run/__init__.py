"""One indexing run and what it writes: the orchestration (run.py), dense segments streamed
and compacted, the copy-on-write text index, the published version, garbage collection,
recovery from damage, a full disk, and the writer lock."""
