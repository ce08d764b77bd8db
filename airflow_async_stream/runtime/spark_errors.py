"""Spark's refusals as a user reads them: its message's first part, where in the query, and its error class.

Spark's analysis errors carry the plan after ``;\\n``, parse errors the SQL text after ``== SQL ==``, and a
py4j error the JVM's whole stack: none of that belongs on a line naming a spec field. No pyspark import here:
it reads what the exception objects carry.
"""

from __future__ import annotations

import re

from airflow_async_stream.runtime.versions import spark_condition

__all__ = ["error_class", "spark_reason"]

_CLASS_PREFIX = re.compile(r"^\[([A-Z0-9_.]+)\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+(?:; line \d+ pos \d+)?|\s*\(line \d+, pos \d+\)")
_POSITION = re.compile(r"line (\d+),? pos (\d+)")
_LONGEST = 500


def _message(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)  # a py4j error Spark did not convert: the JVM's own message
    if java is not None:
        return str(java.getMessage())
    return str(getattr(exc, "_desc", None) or exc)


def error_class(exc: BaseException) -> str | None:
    """Spark's error class (``UNRESOLVED_COLUMN.WITH_SUGGESTION``), or None for a plain error."""
    found = spark_condition(exc)
    if found:
        return found
    match = _CLASS_PREFIX.match(_message(exc).strip())
    return match.group(1) if match else None


def spark_reason(exc: BaseException) -> str:
    """One line: Spark's message without its error-class prefix, plan dump, SQL excerpt or SQLSTATE, then the
    position in the SQL when Spark gives one, then ``(Spark: CLASS)``. A Python error is its type and text."""
    text = _message(exc).strip()
    condition = error_class(exc)
    if condition is None and not type(exc).__module__.startswith(("pyspark", "py4j")):
        return f"{type(exc).__name__}: {' '.join(text.split())}"[:_LONGEST]
    text = _CLASS_PREFIX.sub("", text)
    where = _POSITION.search(text)
    text = _SQLSTATE.sub("", text.split("\n")[0]).rstrip(";").strip()  # Spark's first line says what is wrong
    if where:
        text += f" (line {where[1]}, pos {where[2]})"
    if len(text) > _LONGEST:
        text = text[: _LONGEST - 3] + "..."
    if condition and not condition.startswith("_LEGACY"):
        return f"{text} (Spark: {condition})"
    return text
