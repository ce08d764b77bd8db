"""Async progress tracking that tunes itself: for a job whose spec delegates ``enabled`` or
``checkpoint_interval_ms`` (``auto``), measure, change in place, measure again, keep or revert (the Flink
Kubernetes Operator's autoscaler, for async progress tracking): measure.py (a window of one configuration's
batches), look.py (what the tuner sees and decides), decide.py (the next step, from the documents' reasoning),
settle.py and judge.py (without and within a trial), tune.py (one job: look, decide, act under its hold). Its
record, ``autotune.json``, is state/tuning.py's."""
