"""A cluster driver's proof of whose it is: the submit tags the YARN application (``spark.yarn.tags``) or labels
the Kubernetes driver pod with the deployment id, and a kill first reads that tag back from the cluster manager.

A deployment record sits in the control area, which anyone writing the job's storage can write, so the
application id or pod name it gives proves nothing: a forged one could name any application of the same user.
One that does not carry the deployment's tag is reported, never killed (as a local driver's command line must
name its deployment: driver/process.py ``Target``).
"""

from __future__ import annotations

import re
import subprocess
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_async_stream.driver.process import Target
    from airflow_async_stream.hooks.spark_stream import StreamingJobHook
    from airflow_async_stream.state.records import Driver

__all__ = ["LABEL", "tag_conf", "unproven"]

#: The YARN tag's prefix and the Kubernetes label's key.
LABEL = "async-stream-deployment"
_TAGS = re.compile(r"^\s*Application-Tags\s*:\s*(.*)$", re.MULTILINE)


def tag_conf(manager: str, deployment_id: str, conf: dict[str, str]) -> dict[str, str]:
    """The Spark settings that tag ``deployment_id``'s driver on ``manager`` (a job's own YARN tags kept)."""
    if manager == "yarn":
        tags = [t for t in conf.get("spark.yarn.tags", "").split(",") if t.strip()]
        return {"spark.yarn.tags": ",".join([*tags, _yarn_tag(deployment_id)])}
    if manager == "kubernetes":
        return {f"spark.kubernetes.driver.label.{LABEL}": deployment_id}
    return {}


def _yarn_tag(deployment_id: str) -> str:
    return f"{LABEL}-{deployment_id}".lower()  # YARN keeps tags in lower case


def unproven(hook: StreamingJobHook, driver: Driver, target: Target, env: dict[str, str]) -> str | None:
    """Why the application or pod ``driver`` names is not provably ``target``'s driver; None when it is."""
    if driver.kind == "yarn-application":
        app_id = str(driver.application_id)
        tags = _yarn_tags(hook, app_id, env)
        if tags is None:
            return f"the tags of YARN application {app_id} cannot be read, so it is not provably the driver"
        if _yarn_tag(target.deployment_id) not in tags:
            return (
                f"YARN application {app_id} is not provably the driver: it is not tagged "
                f"{_yarn_tag(target.deployment_id)} (its tags: {', '.join(tags) or 'none'}; the deployment "
                "record may have been written by hand)"
            )
        return None
    if driver.kind == "kubernetes-pod":
        labels = _pod_labels(driver)
        if labels.get(LABEL) != target.deployment_id:
            return (
                f"pod {driver.namespace}/{driver.pod} is not provably the driver: its label {LABEL} is "
                f"{labels.get(LABEL)!r}, not {target.deployment_id!r} (the deployment record may have been "
                "written by hand)"
            )
        return None
    return f"a driver of kind {driver.kind!r} carries no tag to prove it"


def _yarn_tags(hook: StreamingJobHook, app_id: str, env: dict[str, str]) -> list[str] | None:
    """The application's tags: through the ResourceManager's REST API where the connection names it (as the
    provider hook asks after its state), else ``yarn application -status``; None when neither answers."""
    if hook.extra.get("yarn_resourcemanager_webapp_address"):
        import requests

        try:
            url = f"{hook._get_yarn_rm_base_url()}/ws/v1/cluster/apps/{app_id}"
            answer: Any = requests.get(url, auth=hook._resolved_yarn_rm_auth, timeout=30).json()
            return _split(str(answer["app"].get("applicationTags") or ""))
        except (requests.exceptions.RequestException, ValueError, KeyError, TypeError, RuntimeError):
            return None
    out = subprocess.run(
        ["yarn", "application", "-status", app_id], capture_output=True, text=True, env=env, check=False
    )
    match = _TAGS.search(out.stdout)
    return _split(match.group(1)) if match else None


def _split(tags: str) -> list[str]:
    return [t.strip().lower() for t in tags.split(",") if t.strip()]


def _pod_labels(driver: Driver) -> dict[str, str]:
    from airflow.providers.apache.spark.hooks import spark_submit

    kube = spark_submit.kube_client  # type: ignore[attr-defined]  # the hook's own client, as it calls it
    pod = kube.get_kube_client().read_namespaced_pod(driver.pod, driver.namespace)
    return dict(getattr(pod.metadata, "labels", None) or {})
