"""Launch and watch one driver through a Launcher: deploy and stop, process identity, the log pump,
arguments, Maven packages, waiting for committed batches."""
