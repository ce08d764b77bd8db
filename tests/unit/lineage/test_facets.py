"""The custom facets follow OpenLineage's rules for them: keys ``{prefix}_{name}``, classes
``{prefix}{name}{entity}Facet``, and a ``_schemaURL`` that points, on a release's tag, at a JSON schema the
repository publishes (and the package ships) which the facets as sent validate against."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from openlineage.client.serde import Serde
from referencing import Registry, Resource

from airflow_async_stream.lineage import events
from airflow_async_stream.lineage.datasets import configuration
from airflow_async_stream.spec.load import parse_spec

ROOT = Path(__file__).resolve().parents[3]
OPENLINEAGE = json.loads((ROOT / "tests/unit/fixtures/openlineage_2_0_2_facets.json").read_text())

SPEC = parse_spec(
    {
        "name": "clicks",
        "checkpoint": "/data/ck/clicks",
        "async_progress": {"enabled": True},
        "source": {"format": "kafka", "options": {"subscribe": "clicks"}, "connection": "kafka_prod"},
        "sink": {"format": "kafka", "options": {"topic": "enriched"}, "connection": "kafka_prod"},
        "trigger": {"processing_time": "2 seconds"},
    }
)
PROGRESS = {
    "batches": 3,
    "rows": 30,
    "latency_ms_p50": 12.0,
    "latency_ms_max": 40.0,
    "last_batch_id": 7,
    "since": "2026-11-28T03:00:00+00:00",
    "until": "2026-11-28T03:05:00+00:00",
}


def sent_facets() -> tuple[dict[str, Any], dict[str, Any]]:
    event = events.run_event(
        "RUNNING",
        namespace="ns",
        job_name="async-stream-clicks",
        run_id=events.new_run_id(),
        configuration=configuration(SPEC),
        progress=PROGRESS,
    )
    sent = json.loads(Serde.to_json(event))
    return sent["job"]["facets"], sent["run"]["facets"]


def schema_file(url: str) -> tuple[dict[str, Any], str]:
    """The schema a ``_schemaURL`` names, read from the repository, and the JSON pointer's definition name."""
    prefix = f"https://raw.githubusercontent.com/airflow-async-stream/airflow-async-stream/{events.SCHEMAS_TAG}/"
    assert url.startswith(prefix) and re.fullmatch(r"v\d+\.\d+\.\d+", events.SCHEMAS_TAG), url  # a tag, not a branch
    path, _, pointer = url[len(prefix) :].partition("#")
    schema = json.loads((ROOT / path).read_text())
    assert schema["$id"] == url.partition("#")[0]
    return schema, pointer.rsplit("/", 1)[-1]


@pytest.mark.parametrize(
    ("key", "cls", "side"),
    [
        (events.JOB_FACET, events.AsyncStreamConfigurationJobFacet, 0),
        (events.PROGRESS_FACET, events.AsyncStreamProgressRunFacet, 1),
    ],
)
def test_each_facet_validates_against_the_schema_its_url_names(key: str, cls: type, side: int) -> None:
    prefix, _, name = key.partition("_")
    assert (prefix, re.fullmatch(r"[a-z][A-Za-z]*", name) is not None) == ("asyncStream", True)
    entity = "Job" if side == 0 else "Run"
    assert cls.__name__ == f"AsyncStream{name[0].upper()}{name[1:]}{entity}Facet"
    facet = sent_facets()[side][key]
    schema, definition = schema_file(facet["_schemaURL"])
    assert definition == cls.__name__ and definition in schema["$defs"]
    registry = Registry().with_resource(OPENLINEAGE["$id"], Resource.from_contents(OPENLINEAGE))
    jsonschema.Draft202012Validator(schema, registry=registry).validate({key: facet})
    broken = {**facet, "_producer": None} if side == 0 else {**facet, "batches": -1}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema, registry=registry).validate({key: broken})


def test_the_package_ships_the_schemas_it_names() -> None:
    import airflow_async_stream.lineage as package

    shipped = sorted(p.name for p in (Path(package.__file__).parent / "facets").glob("*.json"))
    assert shipped == ["AsyncStreamConfigurationJobFacet.json", "AsyncStreamProgressRunFacet.json"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"airflow_async_stream.lineage" = ["facets/*.json"]' in pyproject
