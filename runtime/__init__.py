"""What every docdex process shares at run time: the environment, read once by an entry
point (environment.py), logging (logs.py), progress display (progress.py), times
(times.py) and the redaction of keys and tokens from what docdex says (redaction.py)."""
