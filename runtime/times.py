"""The one way docdex writes a time: ISO 8601 UTC to the second, e.g. 2026-12-01T02:10:07Z
(manifests, page dates, queue requests, run metrics)."""

from __future__ import annotations

import time

ISO_UTC = "%Y-%m-%dT%H:%M:%SZ"


def iso_utc(timestamp: float | None = None) -> str:
    """`timestamp` (seconds since the epoch; None: now) as stored."""
    return time.strftime(ISO_UTC, time.gmtime(timestamp))
