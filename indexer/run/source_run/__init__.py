"""One source's run: each of its refs a `SourceRun` (source_run.py) that the source's run
(source_indexing.py) diffs and applies, the records of its changed files (page_records.py)
and what its failures report and keep (failures.py)."""
