"""Spark's refusals shaped into one line a user reads (the exceptions as PySpark and py4j hand them over)."""

from __future__ import annotations

import pytest

from airflow_async_stream.runtime.spark_errors import error_class, spark_reason

# The messages below are Spark 4.2.0's, as `validate --analyze` received them.
UNRESOLVED = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nope` cannot be "
    "resolved. Did you mean one of the following? [`value`, `timestamp`]. SQLSTATE: 42703; line 1 pos 7;\n"
    "'Project ['nope]\n+- ~SubqueryAlias source\n"
)
PARSE = (
    "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601 (line 1, pos 0)\n\n== SQL ==\nSELEC\n^^^\n"
)
TABLE = (
    "[TABLE_OR_VIEW_NOT_FOUND] The table or view `sauce` cannot be found. Verify the spelling.\nSearch path: "
    "[`system`.`builtin`].\nTo tolerate the error on drop use DROP VIEW IF EXISTS. SQLSTATE: 42P01; line 1 pos 18;\n"
    "'Project ['value]\n"
)


class CapturedError(Exception):
    """What pyspark.errors raises: the message, and the error class behind getCondition()."""

    __module__ = "pyspark.errors.exceptions.captured"

    def __init__(self, desc: str, condition: str | None) -> None:
        super().__init__(desc)
        self._desc, self._condition = desc, condition

    def getCondition(self) -> str | None:  # noqa: N802 - PySpark's name
        return self._condition


class JavaError:
    def __init__(self, message: str) -> None:
        self.message = message

    def getMessage(self) -> str:  # noqa: N802 - Java's name
        return self.message


class Py4JError(Exception):
    """A JVM error PySpark did not convert: py4j's whole text, and the Java exception behind it."""

    __module__ = "py4j.protocol"

    def __init__(self, java_message: str) -> None:
        super().__init__("An error occurred while calling o331.load.\n: org.apache...: " + java_message + "\n\tat ...")
        self.java_exception = JavaError(java_message)


@pytest.mark.parametrize(
    ("message", "condition", "expected"),
    [
        (  # an analysis error: its first sentence, position and class; the plan dropped
            UNRESOLVED,
            "UNRESOLVED_COLUMN.WITH_SUGGESTION",
            "A column, variable, or function parameter with name `nope` cannot be resolved. Did you mean one of the "
            "following? [`value`, `timestamp`]. (line 1, pos 7) (Spark: UNRESOLVED_COLUMN.WITH_SUGGESTION)",
        ),
        (  # a parse error: its SQL excerpt dropped, the position kept
            PARSE,
            "PARSE_SYNTAX_ERROR",
            "Syntax error at or near 'SELEC'. (line 1, pos 0) (Spark: PARSE_SYNTAX_ERROR)",
        ),
        (  # a long explanation: cut to its first line, the position kept
            TABLE,
            "TABLE_OR_VIEW_NOT_FOUND",
            "The table or view `sauce` cannot be found. Verify the spelling. (line 1, pos 18) "
            "(Spark: TABLE_OR_VIEW_NOT_FOUND)",
        ),
    ],
)
def test_a_captured_error_reads_as_one_line(message: str, condition: str, expected: str) -> None:
    assert spark_reason(CapturedError(message, condition)) == expected


def test_an_unconverted_jvm_error_reads_the_java_message_and_its_class_prefix() -> None:
    exc = Py4JError("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: rat. Make sure ... SQLSTATE: 42K02")
    assert error_class(exc) == "DATA_SOURCE_NOT_FOUND"
    assert spark_reason(exc) == "Failed to find the data source: rat. Make sure ... (Spark: DATA_SOURCE_NOT_FOUND)"


def test_a_legacy_class_is_not_shown_and_a_python_error_is_its_type_and_text() -> None:
    legacy = CapturedError("Invalid value '-1'. The option 'rowsPerSecond' must be positive", "_LEGACY_ERROR_TEMP_2048")
    assert spark_reason(legacy) == "Invalid value '-1'. The option 'rowsPerSecond' must be positive"
    assert spark_reason(KeyError("tag")) == "KeyError: 'tag'"
