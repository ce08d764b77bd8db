"""What lives beside a checkpoint: records and the control area, the hold and its fence, the progress log,
the checkpoint inspector and the registry of job names."""
