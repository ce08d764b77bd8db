"""Whether a query's failure is one a moment cures: its source or sink briefly unreachable (a refused or reset
connection, a timeout, a name that did not resolve, a store asking to slow down). Such a query is restarted
inside its live driver (runtime/requery.py); anything else ends the driver and the supervisor acts.

A sign of a failure no restart cures wins over a transient one in the same error (a plan Spark refuses, a
checkpoint that cannot restart, a second writer, memory, a row the user's code raised on).
"""

from __future__ import annotations

import re

__all__ = ["transient_cause"]

#: Java's, Python's, Kafka's and the object stores' words for a peer that did not answer for a moment.
_TRANSIENT = re.compile(
    r"java\.net\.(?:ConnectException|SocketTimeoutException|SocketException|UnknownHostException|"
    r"NoRouteToHostException)|Connection(?:Refused|Reset|Aborted)Error|BrokenPipeError|\bTimeoutError\b|"
    r"Connection refused|Connection reset|Temporary failure in name resolution|"
    r"org\.apache\.kafka\.common\.errors\.(?:TimeoutException|NetworkException|DisconnectException)|"
    r"\bSlowDown\b|ServiceUnavailable|503 Service Unavailable|Throttl(?:ing|ed)Exception"
)
#: Failures no restart cures, even when a transient word appears beside them.
_PERMANENT = re.compile(
    r"AnalysisException|UNRESOLVED_COLUMN|doesn't exist|Multiple streaming (?:jobs detected|queries)|OutOfMemoryError|"
    r"USER_RAISED_EXCEPTION|IllegalStateException|SparkUpgradeException|SCHEMA_NOT_FOUND|PERMISSION_DENIED"
)


def transient_cause(error: str | None) -> str | None:
    """The words that make ``error`` transient, or None when it is not (or something permanent is there too)."""
    if not error or _PERMANENT.search(error):
        return None
    found = _TRANSIENT.search(error)
    return found.group(0) if found else None
