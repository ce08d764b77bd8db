"""Rollouts: bring the running fleet to what a folder of spec files says, one planned action per job.

``desired`` reads the folder, ``observed`` reads each job's control area, ``planner`` compares them,
``apply`` carries out one job's action inside a task, ``dags`` builds the rollout and toggle-off DAGs.
"""
