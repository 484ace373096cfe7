"""A real HTTP server on 127.0.0.1 for the retriever tests (one per test), and a raw
socket server that sends its answer a byte at a time."""

from __future__ import annotations

import socket
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


def send_json(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    """Answer ``handler``'s request with ``status`` and the JSON ``body`` (nothing, when
    the client gave up first, as the timeout tests' clients do)."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        return


def url_of(server: ThreadingHTTPServer, path: str) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}{path}"


@contextmanager
def dripping(answer: bytes, *, interval: float = 0.2, at_once: int = 0) -> Iterator[str]:
    """A raw socket server on 127.0.0.1 that reads each request's headers and body, then
    sends ``answer`` (the whole HTTP answer: status line, headers, body) a byte every
    ``interval`` seconds after its first ``at_once`` bytes; yields its URL.  Each
    connection has its own thread; all stop when the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.01)
    done = threading.Event()

    def drip(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                _read_request(conn)
                conn.sendall(answer[:at_once])
                for index in range(at_once, len(answer)):
                    if done.wait(interval):
                        return
                    conn.sendall(answer[index : index + 1])
            except OSError:
                return  # the client shut the connection at its deadline

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    host, port = listener.getsockname()[:2]
    try:
        yield f"http://{host}:{port}/search"
    finally:
        done.set()
        thread.join(5)
        listener.close()


def _read_request(conn: socket.socket) -> None:
    """Read one request: its headers, then as many body bytes as Content-Length says."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or b"0")
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return
        body += piece
