"""A real HTTP server on 127.0.0.1 for the retriever tests (one per test)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

Server = TypeVar("Server", bound=ThreadingHTTPServer)


@contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler],
    server: type[Server] = ThreadingHTTPServer,  # type: ignore[assignment]
    **attributes: object,
) -> Iterator[Server]:
    """Serve ``handler`` on a free port in a thread (``server``: its class);
    ``attributes`` are set on the server (handlers record what they saw there)."""
    httpd = server(("127.0.0.1", 0), handler)
    for name, value in attributes.items():
        setattr(httpd, name, value)
    # polled often: shutdown() waits for the next poll (half a second by default)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def url_of(server: ThreadingHTTPServer, path: str) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}{path}"
