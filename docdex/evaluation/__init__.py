"""Retrieval evaluation (`docdex eval`): query files scored as docs/retrieval.md defines
(scoring.py), run through the engine (runs.py) and printed (tables.py)."""
