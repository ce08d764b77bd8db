"""The streaming-jobs app: two pages and their JSON, every route behind Airflow's auth manager.

Airflow mounts a plugin's app outside its own routers, so nothing here is protected unless the app asks: every
route depends on a logged-in user allowed Airflow's Jobs view (401 without a token, 403 with a bad one or
without the permission). Jobs come from the ``[async_stream]`` settings, read at every request so a change
needs no restart; the pages are read-only, and every answer carries the security headers (``HEADERS``; a
page's Content-Security-Policy lets only its own inline script and style run).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse

from airflow_async_stream.insight.overview import job_detail, job_row, job_rows
from airflow_async_stream.state.sources import OPTIONS, SECTION, Found, configured, find_jobs

__all__ = ["HEADERS", "SECTION", "create_app", "policy", "sources"]

_PAGES = Path(__file__).parent


def sources() -> dict[str, list[str]]:
    """The configured fleet indexes and checkpoint folders; a config that cannot be read raises, never
    falls back to nothing."""
    return configured() or {option: [] for option in OPTIONS}  # the api-server has Airflow: never None here


def _found() -> tuple[dict[str, list[str]], list[Found]]:
    configured = sources()
    return configured, find_jobs(configured["fleet_indexes"], configured["checkpoint_folders"])


#: Sent with every answer: no other site frames the pages (Airflow's own UI, same origin, does), no type sniffing,
#: no address leaked to a link's target.
HEADERS = {"X-Frame-Options": "SAMEORIGIN", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
#: The JSON's policy: it is data, never a document.
DATA_POLICY = "default-src 'none'; frame-ancestors 'self'"


def policy(html: str) -> str:
    """A page's Content-Security-Policy: only its own inline script and style run (by their SHA-256), it
    fetches only from this server, and nothing else loads."""

    def hashes(tag: str) -> str:
        found = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(t.encode()).digest()).decode()}'" for t in found)

    return (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
    )


def _page(name: str) -> HTMLResponse:
    html = (_PAGES / name).read_text(encoding="utf-8")
    return HTMLResponse(html, headers={"Cache-Control": "no-store", "Content-Security-Policy": policy(html)})


async def _secure(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every answer (pages, JSON, the guard's 401 and 403) with the headers; the JSON with a data-only policy."""
    response = await call_next(request)
    response.headers.update(HEADERS)
    response.headers.setdefault("Content-Security-Policy", DATA_POLICY)
    return response


def jobs_page() -> HTMLResponse:
    return _page("jobs.html")


def job_page(name: str) -> HTMLResponse:
    return _page("job.html")  # the page reads its job's name from its own address


def list_jobs() -> dict[str, Any]:
    started = time.perf_counter()
    configured, found = _found()
    rows = job_rows(found)
    return {
        "jobs": rows,
        "sources": configured,
        "read_at": time.time(),
        "seconds": round(time.perf_counter() - started, 3),
    }


def one_job(
    name: str, checkpoint: Annotated[str | None, Query(description="which one, when two jobs share the name")] = None
) -> dict[str, Any]:
    configured, found = _found()
    readable = [job for job in found if not job.error and checkpoint in (None, job.checkpoint)]
    # a folder names a job by its checkpoint's folder; its spec may name it otherwise (read only if need be)
    named = [job for job in readable if job.name == name] or [j for j in readable if job_row(j)["name"] == name]
    if not named:
        where = ", ".join(configured["fleet_indexes"] + configured["checkpoint_folders"]) or "no source configured"
        raise HTTPException(404, f"no job named {name!r} in the configured sources ({where})")
    if len(named) > 1:
        raise HTTPException(
            409,
            f"{len(named)} jobs are named {name!r}; choose one with ?checkpoint= one of "
            + ", ".join(j.checkpoint for j in named),
        )
    return job_detail(named[0])


def create_app() -> FastAPI:
    """The app the plugin mounts; Airflow's security module is imported here, on the api-server only."""
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import requires_access_view

    app = FastAPI(
        title="Streaming jobs (airflow-async-stream)",
        description="Read-only: the jobs of the fleet indexes and checkpoint folders in [async_stream].",
        dependencies=[Depends(requires_access_view(AccessView.JOBS))],
        docs_url=None,  # FastAPI's own pages (docs, redoc, the schema) would skip the dependency above: none
        redoc_url=None,
        openapi_url=None,
    )
    app.middleware("http")(_secure)
    app.get("/", response_class=HTMLResponse, summary="the jobs page")(jobs_page)
    app.get("/jobs/{name}", response_class=HTMLResponse, summary="one job's page")(job_page)
    app.get("/api/jobs", summary="every job's row")(list_jobs)
    app.get("/api/jobs/{name}", summary="one job: its row, advice, latency series and changes")(one_job)
    return app
