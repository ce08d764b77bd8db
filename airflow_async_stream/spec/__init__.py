"""What a job is: the spec model and its rules, spec files and folders, interpolation, secret options.

The spec is the single description of a job; every rule lives here and runs at DAG parse, before submit
and in the driver. The model's public names are importable from this package.
"""

from airflow_async_stream.spec.model import *  # noqa: F403 (the package's public face is the model's __all__)
from airflow_async_stream.spec.model import __all__  # noqa: F401
