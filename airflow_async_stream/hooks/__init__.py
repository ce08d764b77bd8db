"""Hooks: how the provider reaches Spark."""
