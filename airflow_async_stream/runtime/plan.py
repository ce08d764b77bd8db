"""Find stateful operators in a streaming query's analyzed logical plan, before Spark starts it.

Spark refuses a stateful query with async progress tracking only at its first batch. The analyzed plan
(``explain(mode="extended")``, which unlike the physical plan works for SQL over streaming views) marks
streaming nodes with ``~``. Stateful means: a streaming aggregation, dedup, ``[flat]mapGroupsWithState``
or ``transformWithState``, a streaming limit, or a join whose two sides are both streaming.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "REAL_TIME_REFUSED_NODES",
    "PlanNode",
    "analyzed_plan_section",
    "parse_tree",
    "real_time_refused_in",
    "stateful_operators_in",
    "streaming_nodes",
]

STATEFUL_NODES = frozenset(
    {
        "Aggregate",
        "Distinct",
        "Deduplicate",
        "DeduplicateWithinWatermark",
        "FlatMapGroupsWithState",
        "FlatMapGroupsInPandasWithState",
        "TransformWithState",
        "TransformWithStateInPandas",
        "TransformWithStateInPySpark",
        "GlobalLimit",
    }
)
#: Logical nodes that always plan a physical operator outside real-time mode's allow-list (Spark 4.2.0's
#: ``RealTimeModeAllowlist``: no aggregation, sort, shuffle, window or limit; spec/realtime.py). A join is not
#: here: a broadcast join passes, and which join Spark picks is its planner's choice.
REAL_TIME_REFUSED_NODES = STATEFUL_NODES | {
    "Sort",
    "Window",
    "LocalLimit",
    "Repartition",
    "RepartitionByExpression",
    "RebalancePartitions",
}
_PREFIX_RE = re.compile(r"^((?:[ :|+-]{3})*)(\S.*)$")


@dataclass
class PlanNode:
    name: str
    streaming: bool
    children: list[PlanNode] = field(default_factory=list)


def analyzed_plan_section(explain_output: str) -> str:
    """The ``== Analyzed Logical Plan ==`` part of extended explain output, without its schema line."""
    match = re.search(r"== Analyzed Logical Plan ==\n(.*?)(?:\n== |\Z)", explain_output, re.DOTALL)
    if not match:
        raise ValueError("no analyzed logical plan in the explain output")
    lines = match.group(1).splitlines()
    return "\n".join(lines[1:])  # the first line is the output schema


def parse_tree(tree: str) -> PlanNode | None:
    """Parse Spark's tree string (``:- `` / ``+- `` child markers, 3 characters per level)."""
    root: PlanNode | None = None
    stack: list[tuple[int, PlanNode]] = []
    for line in tree.splitlines():
        match = _PREFIX_RE.match(line)
        if not match or not match.group(2):
            continue
        depth = len(match.group(1)) // 3
        text = match.group(2)
        streaming = text.startswith("~")
        name = re.split(r"[\s(\[]", text.lstrip("~'"), maxsplit=1)[0]
        node = PlanNode(name, streaming)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1].children.append(node)
        elif root is None:
            root = node
        else:
            continue  # a detached fragment (e.g. a subquery listing); not part of the main tree
        stack.append((depth, node))
    return root


def streaming_nodes(root: PlanNode | None) -> Iterator[PlanNode]:
    """Every node under ``root`` (``root`` too) that Spark marks as streaming."""
    pending = [root] if root else []
    while pending:
        node = pending.pop()
        pending.extend(node.children)
        if node.streaming:
            yield node


def stateful_operators_in(root: PlanNode | None) -> list[str]:
    """Names of the stateful streaming operators under ``root``, sorted and unique."""
    found: set[str] = set()
    for node in streaming_nodes(root):
        if node.name in STATEFUL_NODES:
            found.add(node.name)
        elif node.name == "Join" and len(node.children) == 2 and all(c.streaming for c in node.children):
            found.add("Join (stream-stream)")
    return sorted(found)


def real_time_refused_in(root: PlanNode | None) -> list[str]:
    """Names of the streaming nodes under ``root`` that real-time mode refuses, sorted and unique."""
    return sorted({node.name for node in streaming_nodes(root) if node.name in REAL_TIME_REFUSED_NODES})
