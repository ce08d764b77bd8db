"""Trigger intervals parsed as Spark parses them, so a spec Spark would refuse is refused at DAG parse.

A port of PySpark 4.2.0's path for ``trigger(processingTime=/continuous=/realTime=)``: PySpark strips the
string, then the JVM's ``Triggers.convert`` parses it with ``SparkIntervalUtils.stringToInterval`` (a state
machine over the lower-cased bytes), refuses months and years, and ``Triggers.validate`` refuses a negative
result. tests/integration/test_interval_agreement.py runs this and Spark's own parser over the same strings.
"""

from __future__ import annotations

import re

__all__ = ["SPARK_INTERVALS_READ_FROM", "IntervalError", "interval_ms", "time_string_ms"]

#: The PySpark release whose parser this module follows (the agreement test fails on another one).
SPARK_INTERVALS_READ_FROM = "4.2.0"

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
_JAVA_WHITESPACE = frozenset(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ")
_FRACTION_START = 100_000_000  # a tenth of a second, in nanoseconds
_MICROS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000, "microsecond": 1}
_UNITS = ("year", "week", "day", "hour", "second", "month", "minute", "millisecond", "microsecond")
_HINTS = {
    "s": "seconds",
    "sec": "seconds",
    "secs": "seconds",
    "ms": "milliseconds",
    "m": "minutes",
    "min": "minutes",
    "mins": "minutes",
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "d": "days",
    "us": "microseconds",
}
_FORM = "write it as Spark does, e.g. '5 seconds', '500 milliseconds', '1 minute 30 seconds'"


class IntervalError(ValueError):
    """An interval Spark would refuse, with Spark's error class and a hint in words."""


class _OutOfRangeError(IntervalError):
    """Java's exact arithmetic overflowed (the caller adds the text)."""


def _exact(value: int, limit: int = _LONG_MAX) -> int:
    if not -limit - 1 <= value <= limit:
        raise _OutOfRangeError("is out of range for Spark (INVALID_INTERVAL_FORMAT.ARITHMETIC_EXCEPTION)")
    return value


def _hint(text: str) -> str:
    words = text.replace(",", " ").split()
    for i, word in enumerate(words):
        digits = word.lstrip("+-.0123456789")
        number = word[: len(word) - len(digits)]
        unit = digits.lower() or (words[i + 1].lower() if i + 1 < len(words) else "")
        if number and unit in _HINTS:
            return f"Spark wants '{number} {_HINTS[unit]}', not {text!r}"
    return _FORM


def _refuse(text: str, what: str, error_class: str) -> IntervalError:
    return IntervalError(f"{text!r} {what} (Spark: INVALID_INTERVAL_FORMAT.{error_class}); {_hint(text)}")


class _IntervalParser:
    """Spark's ``stringToInterval`` state machine, state names kept, over ``s`` (lower-cased bytes)."""

    def __init__(self, text: str, s: bytes) -> None:
        self.text, self.s = text, s
        self.i, self.state = 0, "PREFIX"
        self.value, self.negative, self.scale, self.fraction, self.point_prefixed = 0, False, -1, 0, False
        self.months, self.days, self.micros = 0, 0, 0

    def run(self) -> tuple[int, int, int]:
        s = self.s
        while self.i < len(s):
            getattr(self, "_" + self.state.lower())(s[self.i])
        if self.state in ("UNIT_SUFFIX", "UNIT_END", "TRIM_BEFORE_SIGN"):
            return self.months, self.days, self.micros
        if self.state == "TRIM_BEFORE_VALUE":
            raise _refuse(self.text, "a sign is not followed by a number", "MISSING_NUMBER")
        if self.state in ("VALUE", "VALUE_FRACTIONAL_PART"):
            raise _refuse(self.text, "a number is not followed by a unit", "MISSING_UNIT")
        raise _refuse(self.text, "is not an interval", "UNKNOWN_PARSING_ERROR")  # unreachable in Spark too

    def _trim(self, b: int, following: str) -> None:
        if b in _JAVA_WHITESPACE:
            self.i += 1
        else:
            self.state = following

    def _prefix(self, b: int) -> None:
        s = self.s
        if s.startswith(b"interval"):
            if len(s) == 8:
                raise _refuse(self.text, "is empty after 'interval'", "INPUT_IS_EMPTY")
            if s[8] not in _JAVA_WHITESPACE:
                raise _refuse(self.text, "starts with an unknown prefix", "INVALID_PREFIX")
            self.i += 9
        self.state = "TRIM_BEFORE_SIGN"

    def _trim_before_sign(self, b: int) -> None:
        self._trim(b, "SIGN")

    def _trim_before_value(self, b: int) -> None:
        self._trim(b, "VALUE")

    def _trim_before_unit(self, b: int) -> None:
        self._trim(b, "UNIT_BEGIN")

    def _sign(self, b: int) -> None:
        self.value, self.fraction, self.state, self.scale, self.point_prefixed = 0, 0, "TRIM_BEFORE_VALUE", -1, False
        self.negative = b == ord("-")
        if b in b"+-":
            self.i += 1
        elif b == ord("."):
            self.scale, self.point_prefixed, self.state = _FRACTION_START, True, "VALUE_FRACTIONAL_PART"
            self.i += 1
        elif not 48 <= b <= 57:
            raise _refuse(self.text, "does not start with a number", "UNRECOGNIZED_NUMBER")

    def _value(self, b: int) -> None:
        if 48 <= b <= 57:
            self.value = _exact(10 * self.value + b - 48)
        elif b in _JAVA_WHITESPACE:
            self.state = "TRIM_BEFORE_UNIT"
        elif b == ord("."):
            self.scale, self.state = _FRACTION_START, "VALUE_FRACTIONAL_PART"
        else:
            raise _refuse(self.text, "has a number glued to other characters", "INVALID_VALUE")
        self.i += 1

    def _value_fractional_part(self, b: int) -> None:
        digit = 48 <= b <= 57
        if digit and self.scale > 0:
            self.fraction += (b - 48) * self.scale
            self.scale //= 10
        elif b in _JAVA_WHITESPACE and (not self.point_prefixed or self.scale < _FRACTION_START):
            self.fraction //= 1000
            self.state = "TRIM_BEFORE_UNIT"
        elif digit:
            raise _refuse(self.text, "has more than 9 decimal places", "INVALID_PRECISION")
        else:
            raise _refuse(self.text, "has a malformed number", "INVALID_VALUE")
        self.i += 1

    def _unit_begin(self, b: int) -> None:
        if b != ord("s") and self.scale >= 0:
            raise _refuse(self.text, "has a fraction on a unit other than seconds", "INVALID_FRACTION")
        value, fraction = (-self.value, -self.fraction) if self.negative else (self.value, self.fraction)
        unit = next((u for u in _UNITS if u[0] == chr(b) and self.s.startswith(u.encode(), self.i)), None)
        if unit is None:
            raise _refuse(self.text, "has a unit Spark does not know", "INVALID_UNIT")
        if unit == "year":
            self.months = _exact(self.months + _exact(12 * value), _INT_MAX)
        elif unit == "month":
            self.months = _exact(self.months + _exact(value, _INT_MAX), _INT_MAX)
        elif unit == "week":
            self.days = _exact(self.days + _exact(7 * value), _INT_MAX)
        elif unit == "day":
            self.days = _exact(self.days + _exact(value, _INT_MAX), _INT_MAX)
        else:
            added = _exact(value * _MICROS[unit])
            self.micros = _exact(_exact(self.micros + added) + (fraction if unit == "second" else 0))
        self.i += len(unit)
        self.state = "UNIT_SUFFIX"

    def _unit_suffix(self, b: int) -> None:
        if b == ord("s"):
            self.state = "UNIT_END"
        elif b in _JAVA_WHITESPACE:
            self.state = "TRIM_BEFORE_SIGN"
        else:
            raise _refuse(self.text, "has a unit Spark does not know", "INVALID_UNIT")
        self.i += 1

    def _unit_end(self, b: int) -> None:
        if b not in _JAVA_WHITESPACE:
            raise _refuse(self.text, "has a unit Spark does not know", "INVALID_UNIT")
        self.i += 1
        self.state = "TRIM_BEFORE_SIGN"


def _spark_bytes(text: str) -> bytes:
    """What Spark's parser walks: PySpark's ``strip()``, then the JVM's ``trimAll().toLowerCase()``; a
    character outside ASCII can never be part of an interval there (every byte of it is refused)."""
    stripped = text.strip()
    if not stripped:
        raise IntervalError(f"{text!r} is empty (PySpark: VALUE_NOT_NON_EMPTY_STR); " + _FORM)
    raw = stripped.encode("utf-8")
    start, end = 0, len(raw)
    while start < end and raw[start] in _JAVA_WHITESPACE:
        start += 1
    while end > start and raw[end - 1] in _JAVA_WHITESPACE:
        end -= 1
    if not raw[start:end].isascii():
        raise _refuse(text, "has a character Spark's parser does not accept", "INVALID_VALUE")
    return raw[start:end].lower()


def interval_ms(text: str, positive: bool = False) -> int:
    """The trigger interval in milliseconds, as Spark computes it; IntervalError where Spark would fail
    (``positive``: a real-time batch duration, which Spark requires to be above 0)."""
    if not isinstance(text, str):
        raise IntervalError(f"must be a string such as '5 seconds', got {type(text).__name__}")
    try:
        months, days, micros = _IntervalParser(text, _spark_bytes(text)).run()
        total = _exact(_exact(days * 86_400_000_000) + micros)
    except _OutOfRangeError as exc:
        raise IntervalError(f"{text!r} {exc}") from None
    if months:
        raise IntervalError(f"{text!r} may not use months or years (Spark refuses them in a trigger); {_FORM}")
    ms = total // 1000  # floor, as SparkDateTimeUtils.microsToMillis
    if ms < 0:
        raise IntervalError(f"{text!r} must not be negative (Spark: the interval of trigger should not be negative)")
    if positive and ms == 0:
        raise IntervalError(f"{text!r} must be above 0 ms (Spark: the batch duration should not be negative)")
    return ms


#: Spark's time strings (``JavaUtils.timeStringAs``: ``5s``, ``500ms``, ``2min``) for settings and options.
_TIME_STRING = re.compile(r"(-?[0-9]+)([a-z]+)?")
_TIME_SUFFIX_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_JAVA_TRIM = "".join(chr(c) for c in range(33))


def time_string_ms(text: str, default_unit: str) -> int | None:
    """A Spark time string in ms (a bare number is in ``default_unit``); None where Spark would refuse it."""
    match = _TIME_STRING.fullmatch(str(text).lower().strip(_JAVA_TRIM))
    if not match or (match.group(2) and match.group(2) not in _TIME_SUFFIX_MS):
        return None
    if not -_LONG_MAX - 1 <= int(match.group(1)) <= _LONG_MAX:  # Long.parseLong
        return None
    return int(int(match.group(1)) * _TIME_SUFFIX_MS[match.group(2) or default_unit])
