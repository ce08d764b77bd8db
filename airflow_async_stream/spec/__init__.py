"""What a job is: the spec model and its parts, its rules, reading it from files and folders, interpolation,
secret options.

The spec is the single description of a job; every rule lives here and runs at DAG parse, before submit
and in the driver. The names a DAG author uses are importable from this package.
"""

from airflow_async_stream.spec.endpoints import Sink, Source, Transform
from airflow_async_stream.spec.load import (
    SpecInput,
    deep_merge,
    is_templated,
    load_spec,
    parse_spec,
    read_spec_file,
    resolve_spec,
    spec_operand,
)
from airflow_async_stream.spec.logs import Logs
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.rules import ASYNC_SINKS
from airflow_async_stream.spec.schema import spec_json_schema
from airflow_async_stream.spec.tracking import AsyncProgress, Autotune
from airflow_async_stream.spec.trigger import Trigger

__all__ = [
    "ASYNC_SINKS",
    "AsyncProgress",
    "Autotune",
    "JobSpec",
    "Logs",
    "Sink",
    "Source",
    "SpecInput",
    "Transform",
    "Trigger",
    "deep_merge",
    "is_templated",
    "load_spec",
    "parse_spec",
    "read_spec_file",
    "resolve_spec",
    "spec_json_schema",
    "spec_operand",
]
