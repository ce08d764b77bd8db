"""Sensors over Spark's checkpoint and the job's control area."""
