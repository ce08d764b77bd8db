"""Options of Spark's built-in sources and sinks that have a fixed type or range, checked as Spark checks them
(PySpark 4.2.0: ``RateStreamProvider``, ``RatePerMicroBatchProvider``, ``KafkaSourceProvider``, the file sinks),
so a value Spark refuses at start or at the first batch is refused at DAG parse, naming the option. Option
values are never repeated in a reason (an option may carry a secret). Options Spark does not check are left
to Spark; an option name is matched without regard to case, as Spark matches it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_async_stream.spec.intervals import time_string_ms

if TYPE_CHECKING:
    from airflow_async_stream.spec.endpoints import Sink, Source

__all__ = ["FILE_SINKS", "option_violations"]

_LONG, _INT = 2**63 - 1, 2**31 - 1
_NUMBER = re.compile(r"[+-]?\d+")  # Java's Long.parseLong / Integer.parseInt: a sign, digits, nothing else
_KAFKA_STRATEGIES = ("assign", "subscribe", "subscribepattern")
#: Spark's file sinks: they write to a directory and keep their own log of written files in it.
FILE_SINKS = frozenset({"parquet", "json", "csv", "orc", "text"})
#: Kafka client settings Spark's Kafka source refuses (it manages offsets and (de)serialization itself).
_KAFKA_SOURCE_REFUSED = (
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
    "interceptor.classes",
)
_KAFKA_SINK_REFUSED = ("key.serializer", "value.serializer")


def _whole(value: str, limit: int) -> int | None:
    if not _NUMBER.fullmatch(value):
        return None
    number = int(value)
    return number if -limit - 1 <= number <= limit else None


def _number_rule(limit: int, least: int, words: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        number = _whole(value, limit)
        if number is None:
            return (
                f"must be a whole number ({'a Java long' if limit == _LONG else 'a Java int'}){words and ', ' + words}"
            )
        return None if number >= least else f"must be {words}"

    return check


_POSITIVE_LONG = _number_rule(_LONG, 1, "above 0")
_POSITIVE_INT = _number_rule(_INT, 1, "above 0")
_NON_NEGATIVE_LONG = _number_rule(_LONG, 0, "0 or more")
_NON_NEGATIVE_INT = _number_rule(_INT, 0, "0 or more")
_ANY_LONG = _number_rule(_LONG, -_LONG - 1, "")


def _boolean(value: str) -> str | None:
    return None if value.lower() in ("true", "false") else "must be true or false"


def _ramp_up(value: str) -> str | None:
    ms = time_string_ms(value, "s")
    if ms is None:
        return "must be a Spark time such as '10s' or '2min' (a bare number is seconds)"
    return None if ms >= 0 else "must not be negative"


def _starting_offsets(value: str) -> str | None:
    text = value.strip()
    if text.lower() in ("latest", "earliest"):
        return None
    try:
        offsets = json.loads(text)
    except ValueError:
        offsets = None
    if isinstance(offsets, dict) and all(
        isinstance(parts, dict) and all(isinstance(o, int) and not isinstance(o, bool) for o in parts.values())
        for parts in offsets.values()
    ):
        return None
    return 'must be latest, earliest, or JSON such as {"topicA": {"0": 23, "1": -1}} (-2: earliest, -1: latest)'


#: Per format: option (lower case) -> its check (a reason, or None when Spark accepts the value).
_SOURCE_RULES: dict[str, dict[str, Callable[[str], str | None]]] = {
    "rate": {"rowspersecond": _POSITIVE_LONG, "numpartitions": _POSITIVE_INT, "rampuptime": _ramp_up},
    "rate-micro-batch": {
        "rowsperbatch": _POSITIVE_LONG,
        "numpartitions": _POSITIVE_INT,
        "starttimestamp": _NON_NEGATIVE_LONG,
        "advancemillisperbatch": _NON_NEGATIVE_INT,
    },
    "kafka": {
        "startingoffsets": _starting_offsets,
        "maxoffsetspertrigger": _ANY_LONG,
        "minoffsetspertrigger": _ANY_LONG,
        "minpartitions": _POSITIVE_INT,
        "maxrecordsperpartition": _POSITIVE_LONG,
        "startingtimestamp": lambda v: _ANY_LONG(v.strip()),
        "failondataloss": _boolean,
        "includeheaders": _boolean,
    },
}


def _named(options: dict[str, str]) -> dict[str, str]:
    """Lower-case option name -> the name as written."""
    return {key.lower(): key for key in options}


def _checked(
    where: str, options: dict[str, str], rules: dict[str, Callable[[str], str | None]]
) -> list[tuple[str, str]]:
    names = _named(options)
    found = []
    for lower, check in rules.items():
        if lower in names:
            reason = check(options[names[lower]])
            if reason:
                found.append((f"{where}.options.{names[lower]}", reason))
    return found


def _kafka_source(source: Source, options: dict[str, str]) -> list[tuple[str, str]]:
    names = _named({**options, **source.secret_options})
    found = []
    strategies = [names[k] for k in _KAFKA_STRATEGIES if k in names]
    if len(strategies) != 1:
        found.append(
            (
                "source.options",
                "give exactly one of assign, subscribe or subscribePattern (Kafka source)"
                + (f", not {' and '.join(strategies)}" if strategies else ""),
            )
        )
    elif names.get("subscribe") and not any(t.strip() for t in str(options.get(names["subscribe"], "x")).split(",")):
        found.append((f"source.options.{names['subscribe']}", "names no topic"))
    for lower in ("endingoffsets", "endingoffsetsbytimestamp"):
        if lower in names:
            found.append((f"source.options.{names[lower]}", "is not valid in streaming queries (Spark refuses it)"))
    for setting in _KAFKA_SOURCE_REFUSED:
        if f"kafka.{setting}" in names:
            found.append((f"source.options.{names[f'kafka.{setting}']}", "is not supported by Spark's Kafka source"))
    low, high = (
        _whole(options.get(names.get(k, ""), ""), _LONG) for k in ("minoffsetspertrigger", "maxoffsetspertrigger")
    )
    if low is not None and high is not None and low > high:
        found.append((f"source.options.{names['minoffsetspertrigger']}", "is higher than maxOffsetsPerTrigger"))
    return found


def option_violations(source: Source | None, sink: Sink | None) -> list[tuple[str, str]]:
    """``(field, reason)`` for each option value Spark would refuse (see the module docstring)."""
    found: list[tuple[str, str]] = []
    if source is not None:
        fmt, options = source.format.lower(), source.spark_options()
        found += _checked("source", options, _SOURCE_RULES.get(fmt, {}))
        if fmt == "rate-micro-batch" and "rowsperbatch" not in _named(options):
            found.append(("source.options.rowsPerBatch", "is required by the rate-micro-batch source (above 0)"))
        if fmt == "kafka":
            found += _kafka_source(source, options)
    if sink is not None:
        fmt, names = sink.format.lower(), _named({**sink.spark_options(), **sink.secret_options})
        if fmt in FILE_SINKS and "path" not in names:
            found.append(("sink.options.path", f"the {fmt} sink writes to a directory: give its path"))
        if fmt == "kafka":
            found += [
                (f"sink.options.{names[f'kafka.{s}']}", "is not supported by Spark's Kafka sink")
                for s in _KAFKA_SINK_REFUSED
                if f"kafka.{s}" in names
            ]
    return found
