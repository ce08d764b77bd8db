"""Keeping jobs alive between changes (core, no Airflow): the supervisor's record of each job (record.py), the
restart policy (policy.py), the watcher's sweep over a fleet (watch.py), bringing a job back (recover.py), and
what the supervisor does about one job (act.py)."""
