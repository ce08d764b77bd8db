"""The restart policy decides from records alone: backoff doubling within the window, crash looping past
max_restarts, and a person's stop, a suspend, the policy never, an answered crash: no restart."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_async_stream.insight.health import Health, Verdict
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state.stopped import BY_FILE, BY_PERSON, Stopped
from airflow_async_stream.supervise.policy import Case, Response, respond
from airflow_async_stream.supervise.record import Supervision

AT = 100_000.0
CRASHED = Health(Verdict.CRASHED, "its driver died: killed", since=AT - 1)


def case(**changes: object) -> Case:
    return replace(
        Case(CRASHED, "d9", Restart(backoff="10 seconds", max_backoff="1 minute", max_restarts=3)), **changes
    )  # type: ignore[arg-type]


def restarts(*ago_s: float) -> Supervision:
    return Supervision(
        restarts=[{"at": AT - ago, "answered": f"d{i}", "deployment_id": f"d{i + 1}"} for i, ago in enumerate(ago_s)]
    )


def test_a_crash_waits_out_its_backoff_then_restarts() -> None:
    first = respond(case(), AT)
    assert (first.act, round(first.wait_s), first.restarts_before) == (Response.WAIT, 9, 0)
    assert first.reason == "crashed: restart 1 within 1 hour, due in 9 s (backoff)"
    assert respond(case(), AT + 9).act == Response.RESTART


def test_the_backoff_doubles_with_each_restart_in_the_window_up_to_max_backoff() -> None:
    waits = [respond(case(supervision=restarts(*[300] * n)), AT).wait_s + 1 for n in range(3)]
    assert [round(w) for w in waits] == [10, 20, 40]
    capped = replace(
        case(supervision=restarts(300, 300)), restart=Restart(backoff="40 seconds", max_backoff="1 minute")
    )
    assert round(respond(capped, AT).wait_s + 1) == 60
    # Restarts older than the window do not count.
    assert round(respond(case(supervision=restarts(4000, 4000)), AT).wait_s + 1) == 10


def test_max_restarts_within_the_window_is_crash_looping() -> None:
    looping = respond(case(supervision=restarts(600, 300, 60)), AT)
    assert looping.act == Response.CRASH_LOOPING
    assert looping.reason == (
        "crashed after 3 restarts within 1 hour (restart.max_restarts 3): crash_looping, no more restarts until a "
        "person looks"
    )
    declared = Supervision(restarts=restarts(600, 300, 60).restarts, crash_looping="d9", crash_looping_at=AT)
    assert respond(case(supervision=declared), AT).act == Response.NOTHING  # declared once


@pytest.mark.parametrize(
    ("changes", "act", "words"),
    [
        (
            {"stopped": Stopped(at=AT - 5, kind=BY_PERSON, by="ann@h", deployment_id="d9")},
            Response.LEAVE,
            "stopped by a person (ann@h)",
        ),
        (
            {"stopped": Stopped(at=AT - 5, kind=BY_FILE, by="/f", deployment_id="d9")},
            Response.LEAVE,
            "suspended by its file",
        ),
        ({"suspended": True}, Response.LEAVE, "state: suspended"),
        ({"restart": Restart(policy="never")}, Response.LEAVE, "restart.policy is never"),
        (
            {"supervision": Supervision(restarts=[{"at": AT, "answered": "d9", "deployment_id": "d10"}])},
            Response.NOTHING,
            "restarted already (as deployment d10)",
        ),
        ({"health": Health(Verdict.HEALTHY, "running")}, Response.NOTHING, "healthy: nothing to do"),
        ({"health": Health(Verdict.STOPPED, "stopped on request")}, Response.NOTHING, "stopped: nothing to do"),
        ({"health": Health(Verdict.STALLED, "batch 5 has run for 900 s")}, Response.LEAVE, "health.on_stall is alert"),
    ],
)
def test_what_is_never_restarted(changes: dict[str, object], act: Response, words: str) -> None:
    decision = respond(case(**changes), AT + 3600)
    assert decision.act == act and words in decision.reason, decision


def test_a_stall_is_restarted_when_the_spec_says_so() -> None:
    stalled = case(health=Health(Verdict.STALLED, "batch 5 has run for 900 s", since=AT - 900), on_stall="restart")
    assert respond(stalled, AT).act == Response.RESTART
    failed_start = case(health=Health(Verdict.FAILED_TO_START, "it ran no batch", since=AT - 60))
    assert respond(failed_start, AT).act == Response.RESTART


def test_a_persons_resume_starts_the_count_again() -> None:
    looping = restarts(600, 300, 60)
    assert respond(case(supervision=looping), AT).act == Response.CRASH_LOOPING
    resumed = looping.but(resumed_at=AT - 30)
    assert respond(case(supervision=resumed), AT).act == Response.WAIT


def test_the_drivers_own_query_restarts_count_with_the_supervisors() -> None:
    both = case(supervision=restarts(300), query_restarts=(AT - 200, AT - 100))
    assert (
        respond(both, AT).act == Response.CRASH_LOOPING and "after 3 restarts within 1 hour" in respond(both, AT).reason
    )
    old = case(supervision=restarts(300), query_restarts=(AT - 7200,))  # outside the window
    assert respond(old, AT + 60).act == Response.RESTART and respond(old, AT + 60).restarts_before == 1
    resumed = case(supervision=replace(restarts(300), resumed_at=AT - 150), query_restarts=(AT - 200, AT - 100))
    assert respond(resumed, AT + 60).restarts_before == 1  # a person's resume starts the count again
