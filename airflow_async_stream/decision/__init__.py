"""Observe, then decide (the Flink Kubernetes Operator's observer and reconciler): ``observe`` reads what a job
is now and writes nothing; ``decide`` says what a wanted spec needs of it, checkpoint safety included. Every
actor (the CLI, the planner, a rollback, the migration, the supervisor, the tuner, the deploy guard) acts on a
Decision and computes none of its answers itself."""
