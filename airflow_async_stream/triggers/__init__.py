"""Triggers run by the triggerer for deferrable sensors."""
