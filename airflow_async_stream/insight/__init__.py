"""Read-only judgements from the progress log, the status record and the checkpoint."""
