"""``stop``: a person's stop of a job, graceful or forced where a stop must win; by signal where the job's control
area cannot carry a stop (driver/by_signal.py); ``--driver-gone`` for a driver whose host is gone for good."""

from __future__ import annotations

import argparse
import sys
from functools import partial

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, fail
from airflow_async_stream.cli.names import control_for
from airflow_async_stream.driver.by_signal import drivers_here, end_driver
from airflow_async_stream.driver.deferred import DeferredLauncher
from airflow_async_stream.driver.exits import record_exit, unconfirmed
from airflow_async_stream.driver.launcher import Launcher
from airflow_async_stream.driver.process import this_host
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import ControlAreaError, JobHeldError
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, held, revoke
from airflow_async_stream.state.incidents import one_line, unreadable
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State, hold_ttl_s
from airflow_async_stream.state.stopped import BY_PERSON, by_this_user, record_stop, record_unheld_stop

__all__ = ["cmd_stop"]


def _connection_launcher(conn_id: str) -> Launcher:
    """The Airflow connection's launcher, for a driver on a cluster only (the CLI starts without Airflow)."""
    from airflow_async_stream.hooks.launchers import launcher_for

    return launcher_for(conn_id)


def _driver_gone(control: ControlArea, host: str) -> int:
    """On a person's word, record the exit of the newest driver, launched on ``host``, which is gone for good
    (and its driver with it): deploys from other hosts wait for that record, which no host can write now."""
    deployment = control.read_deployment()
    launched_on = deployment.driver.host if deployment and deployment.driver else None
    if deployment is None or launched_on != host:
        return fail(
            f"--driver-gone {host}: the newest driver of {control.url} was launched on {launched_on or 'no host'}, not {host}"
        )
    status = control.read_status()
    judged = liveness(status)
    if judged.live and status is not None and status.deployment_id == deployment.deployment_id:
        return fail(
            f"--driver-gone {host}: its driver still reports ({judged.reason}), so {host} is not gone; stop it instead",
            EXIT_BAD_STATE,
        )
    if control.read_exit(deployment.deployment_id) is None:
        record_exit(
            control, deployment.deployment_id, f"said by hand on {this_host()}: host {host} is gone, its driver with it"
        )
    print(
        f"recorded: the driver of deployment {deployment.deployment_id} on {host} has exited; a deploy from any host goes on"
    )
    return EXIT_OK


def cmd_stop(args: argparse.Namespace) -> int:
    control = control_for(args.job)
    if args.driver_gone:
        return _driver_gone(control, args.driver_gone)
    try:
        return _stop(control, args)
    except (OSError, ControlAreaError, ValueError) as exc:
        # A record that cannot be written or opened (a folder, a full disk) stops every stop; one that reads
        # wrong (a corrupt hold) is refused unless forced, and --force ends it by the records where it can.
        if not unreadable(exc) or (isinstance(exc, ControlAreaError) and not args.force):
            raise
        return _stop_by_signal(control, args, exc)


def _stop_by_signal(control: ControlArea, args: argparse.Namespace, why: Exception) -> int:
    """The control area cannot carry a stop: this host's drivers of it that prove themselves, ended by signal."""
    broken = one_line(str(why)) or type(why).__name__
    found = drivers_here(control.url)
    if not found:
        return fail(
            f"not stopped: its control area cannot carry a stop ({broken}), and no process of this host "
            "proves to be its driver: stop it on the host that launched it",
            EXIT_BAD_STATE,
        )
    ended = [end_driver(group, control.url, args.graceful_timeout, args.kill_after) for group, _ in found]
    unrecorded = [e for _, d in found if (e := record_unheld_stop(control, d, by_this_user(), "stop by signal"))]
    print(f"stopped by signal (its control area cannot carry a stop: {broken}): {'; '.join(ended)}")
    if unrecorded:
        print(
            f"not recorded as a person's stop ({'; '.join(unrecorded)}): fix the control area before a supervisor "
            "looks at it, or it may see a crash",
            file=sys.stderr,
        )
    return EXIT_BAD_STATE if unrecorded or any("still runs" in e for e in ended) else EXIT_OK


def _stop(control: ControlArea, args: argparse.Namespace) -> int:
    check_up(control, None)  # a driver that died without a final status is recorded failed first, for every host
    holder = Holder.this_process("stop from the command line")
    if args.force:
        revoked = revoke(control, holder, "stop --force from the command line")
        if revoked:
            print(
                f"forced: ended the hold of {revoked.holder} ({revoked.purpose}); "
                "its next step fails without changing the job"
            )
    try:
        with held(control, holder, hold_ttl_s(stops=1, stop_kill_after_s=args.kill_after)) as grant:
            record_stop(control, grant, BY_PERSON, by_this_user(), "stop from the command line")
            outcome = stop_driver(
                control,
                "stop from the command line",
                graceful_timeout_s=args.graceful_timeout,
                kill_after_s=args.kill_after,
                launcher=DeferredLauncher(partial(_connection_launcher, args.conn_id)),
            )
    except JobHeldError as exc:
        return fail(
            f"not stopped: {exc}; add --force to stop it anyway (that holder's next step then fails "
            "without changing the job)",
            EXIT_BAD_STATE,
        )
    if outcome.was_live and outcome.status is None:
        print("stopped: the deployment that was launching ended before its driver reported")
        return EXIT_OK
    state = outcome.status.state if outcome.status else "never deployed"
    if outcome.exiting:  # its query ended, but its process has not been seen to exit
        print(f"stopping: state {state}, but {outcome.exiting.describe()}")
        return EXIT_BAD_STATE
    print(f"{'stopped' if outcome.was_live else 'was not running'}: state {state}")
    waiting = unconfirmed(control)
    if waiting is not None:  # a deploy from any host would wait for that host's exit record, then refuse
        print(f"but {waiting.describe()}: a deploy waits for it{waiting.remedy(args.job)}")
        return EXIT_BAD_STATE
    return EXIT_BAD_STATE if state == State.FAILED else EXIT_OK
