"""Lineage: what a job reads and writes, and how it runs, in OpenLineage's terms (datasets.py), and the events a
running driver emits (running.py). Plain data here; the Airflow faces and the driver hand it to OpenLineage."""
