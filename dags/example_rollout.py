"""Keep the fleet where its spec files say: a scheduled rollout, and the scheduled async toggle-off.

`example_rollout` plans every job of the desired-state folder against what runs (deploy, update,
safe-disable, retire, refuse or leave unchanged) and applies the plan, two jobs at a time; a job whose
new spec does not commit batches is rolled back to its last stable spec. `example_toggle_off` applies
only the safe-disable migrations, for fleets that turn async progress tracking off job by job.
The folder's `_fleet.yaml` names the fleet index (the jobs these rollouts deployed, on shared storage),
so a job whose file is removed is retired from whichever worker runs the rollout. Try
`airflow-async-stream plan dags/desired` to see the plan without applying it. `example_supervise` keeps the
same jobs alive between rollouts: its watcher runs in the triggerer, and a job that crashes is restarted as
its file's `restart` policy says (README: Keeping jobs alive). `example_autotune` takes one tuning step every
five minutes for each job whose file writes `auto` for an async field (README: Letting it tune itself).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow_async_stream.factories import autotune_dag, rollout_dag, supervise_dag, toggle_off_dag

DESIRED = os.environ.get("ASYNC_STREAM_DESIRED_DIR", str(Path(__file__).parent / "desired"))

rollout_dag(DESIRED, dag_id="example_rollout", schedule="@hourly", max_parallel=2)
toggle_off_dag(DESIRED, dag_id="example_toggle_off", schedule="@daily", max_parallel=2)
supervise_dag(DESIRED, dag_id="example_supervise")
autotune_dag(DESIRED, dag_id="example_autotune", schedule=timedelta(minutes=5))
