"""An OpenLineage HTTP endpoint on 127.0.0.1 for the lineage tests: keeps every event it is sent (with the
Authorization header it came with); ``GET /count?eventType=X&job=Y`` says how many of a kind came."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["lineage_receiver"]


@contextlib.contextmanager
def lineage_receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(url, received)``: each received item is ``{"auth": header, "event": the event as JSON}``."""
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"auth": self.headers.get("Authorization"), "event": json.loads(body)})
            self.send_response(201)
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802
            query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            events = [r["event"] for r in list(received)]
            count = sum(
                e.get("eventType") == query.get("eventType") and e["job"]["name"] == query.get("job") for e in events
            )
            body = str(count).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="lineage-receiver", daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
