"""The restart policy decides from records alone: backoff doubling within the window, crash looping past
max_restarts, and a person's stop, a suspend, the policy never, an answered crash: no restart."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_async_stream.insight.health import Health, Verdict
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state.stopped import BY_FILE, BY_PERSON, Stopped
from airflow_async_stream.supervise.policy import Act, Case, decide
from airflow_async_stream.supervise.record import Supervision

AT = 100_000.0
CRASHED = Health(Verdict.CRASHED, "its driver died: killed", since=AT - 1)


def case(**changes: object) -> Case:
    return replace(
        Case(CRASHED, "d9", Restart(backoff="10 seconds", max_backoff="1 minute", max_restarts=3)), **changes
    )  # type: ignore[arg-type]


def restarts(*ago_s: float) -> Supervision:
    return Supervision(restarts=[{"at": AT - ago, "answered": f"d{i}", "deployment_id": f"d{i + 1}"}
                                 for i, ago in enumerate(ago_s)])  # fmt: skip


def test_a_crash_waits_out_its_backoff_then_restarts() -> None:
    first = decide(case(), AT)
    assert (first.act, round(first.wait_s), first.restarts_before) == (Act.WAIT, 9, 0)
    assert first.reason == "crashed: restart 1 within 1 hour, due in 9 s (backoff)"
    assert decide(case(), AT + 9).act == Act.RESTART


def test_the_backoff_doubles_with_each_restart_in_the_window_up_to_max_backoff() -> None:
    waits = [decide(case(supervision=restarts(*[300] * n)), AT).wait_s + 1 for n in range(3)]
    assert [round(w) for w in waits] == [10, 20, 40]
    capped = replace(
        case(supervision=restarts(300, 300)), restart=Restart(backoff="40 seconds", max_backoff="1 minute")
    )
    assert round(decide(capped, AT).wait_s + 1) == 60
    # Restarts older than the window do not count.
    assert round(decide(case(supervision=restarts(4000, 4000)), AT).wait_s + 1) == 10


def test_max_restarts_within_the_window_is_crash_looping() -> None:
    looping = decide(case(supervision=restarts(600, 300, 60)), AT)
    assert looping.act == Act.CRASH_LOOPING
    assert looping.reason == (
        "crashed after 3 restarts within 1 hour (restart.max_restarts 3): crash_looping, no more restarts until a "
        "person looks"
    )
    declared = Supervision(restarts=restarts(600, 300, 60).restarts, crash_looping="d9", crash_looping_at=AT)
    assert decide(case(supervision=declared), AT).act == Act.NOTHING  # declared once


@pytest.mark.parametrize(
    ("changes", "act", "words"),
    [
        ({"stopped": Stopped(at=AT - 5, kind=BY_PERSON, by="ann@h", deployment_id="d9")}, Act.LEAVE, "stopped by a person (ann@h)"),
        ({"stopped": Stopped(at=AT - 5, kind=BY_FILE, by="/f", deployment_id="d9")}, Act.LEAVE, "suspended by its file"),
        ({"suspended": True}, Act.LEAVE, "state: suspended"),
        ({"restart": Restart(policy="never")}, Act.LEAVE, "restart.policy is never"),
        ({"supervision": Supervision(restarts=[{"at": AT, "answered": "d9", "deployment_id": "d10"}])}, Act.NOTHING, "restarted already (as deployment d10)"),
        ({"health": Health(Verdict.HEALTHY, "running")}, Act.NOTHING, "healthy: nothing to do"),
        ({"health": Health(Verdict.STOPPED, "stopped on request")}, Act.NOTHING, "stopped: nothing to do"),
        ({"health": Health(Verdict.STALLED, "batch 5 has run for 900 s")}, Act.LEAVE, "health.on_stall is alert"),
    ],
)  # fmt: skip
def test_what_is_never_restarted(changes: dict[str, object], act: Act, words: str) -> None:
    decision = decide(case(**changes), AT + 3600)
    assert decision.act == act and words in decision.reason, decision


def test_a_stall_is_restarted_when_the_spec_says_so() -> None:
    stalled = case(health=Health(Verdict.STALLED, "batch 5 has run for 900 s", since=AT - 900), on_stall="restart")
    assert decide(stalled, AT).act == Act.RESTART
    failed_start = case(health=Health(Verdict.FAILED_TO_START, "it ran no batch", since=AT - 60))
    assert decide(failed_start, AT).act == Act.RESTART


def test_a_persons_resume_starts_the_count_again() -> None:
    looping = restarts(600, 300, 60)
    assert decide(case(supervision=looping), AT).act == Act.CRASH_LOOPING
    resumed = looping.but(resumed_at=AT - 30)
    assert decide(case(supervision=resumed), AT).act == Act.WAIT


def test_the_drivers_own_query_restarts_count_with_the_supervisors() -> None:
    both = case(supervision=restarts(300), query_restarts=(AT - 200, AT - 100))
    assert decide(both, AT).act == Act.CRASH_LOOPING and "after 3 restarts within 1 hour" in decide(both, AT).reason
    old = case(supervision=restarts(300), query_restarts=(AT - 7200,))  # outside the window
    assert decide(old, AT + 60).act == Act.RESTART and decide(old, AT + 60).restarts_before == 1
    resumed = case(supervision=replace(restarts(300), resumed_at=AT - 150), query_restarts=(AT - 200, AT - 100))
    assert decide(resumed, AT + 60).restarts_before == 1  # a person's resume starts the count again
