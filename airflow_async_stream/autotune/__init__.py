"""Async progress tracking that tunes itself: for a job whose spec delegates ``enabled`` or
``checkpoint_interval_ms`` (``auto``), measure, change in place, measure again, keep or revert (the Flink
Kubernetes Operator's autoscaler, for async progress tracking): measure.py (a window of one configuration's
batches), decide.py (the next step, from the documents' reasoning), record.py (``autotune.json``: the trial under
way and every decision), tune.py (one job: look, decide, act under its hold)."""
