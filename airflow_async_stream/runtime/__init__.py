"""Code that runs inside the Spark driver: the only part of the project that imports pyspark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_async_stream.runtime import context

if TYPE_CHECKING:
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = ["govern"]


def govern(writer: DataStreamWriter) -> None:
    """Hand your application's DataStreamWriter to the runtime.

    The runtime applies the spec's checkpoint, trigger and async progress options, refuses a stateful
    query with async on before it starts, starts the query and governs it (status, progress log, graceful
    stop, in-place switches of those options) until it ends. Call it once, as the last step of your
    application file.
    """
    from airflow_async_stream.runtime.query import apply_spec_to_writer, refuse_stateful_with_async

    ctx = context.current()
    if ctx.used:
        raise RuntimeError("govern() was already called: one governed query per job")
    ctx.used = True
    # PySpark keeps the writer's DataFrame on `_df`; its plan is the only way to see stateful operators
    # before start().
    df = getattr(writer, "_df", None)
    if df is not None:
        refuse_stateful_with_async(df, ctx.spec)
    writer = apply_spec_to_writer(
        writer, ctx.spec, application_mode=True, secret_options=ctx.secrets.options.get("sink")
    )
    ctx.governor.run(writer, ctx.spark, ctx.spec, df)
