"""``python -m airflow_async_stream.cli``."""

import sys

from airflow_async_stream.cli import main

if __name__ == "__main__":
    sys.exit(main())
