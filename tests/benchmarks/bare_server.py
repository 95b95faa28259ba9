"""The bare baseline of the list, search and analytics aims: an HTTP server with nothing in it
but the service's own SQL statements, run with psycopg, and ``json.dumps`` of their rows.

Python's own ``ThreadingHTTPServer`` (HTTP/1.1, kept-alive connections, a thread per
connection, each thread with its own autocommit psycopg connection). A benchmark registers the
statements of a path (``POST /__statements`` with ``{"path": ..., "statements": [...]}``, the
SQL the service ran for that path, parameters bound); ``GET`` of the path then runs them in
order and answers 200 with their rows as JSON. No authentication, no framework, no middleware:
what is left is the database's work, the rows' encoding and the HTTP exchange.

Run: ``python -m tests.benchmarks.bare_server --port 8123 --dsn postgres://...``.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

STATEMENTS: dict[str, list[str]] = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body are two writes
    dsn = ""
    local = threading.local()

    def _connection(self) -> psycopg.Connection:
        connection = getattr(self.local, "connection", None)
        if connection is None or connection.closed:
            connection = self.local.connection = psycopg.connect(self.dsn, autocommit=True)
        return connection

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        statements = STATEMENTS.get(self.path)
        if statements is None:
            self._answer(404, b'{"error": "no statements registered for this path"}')
            return
        out = []
        with self._connection().cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
                if cursor.description is None:
                    continue
                columns = [column.name for column in cursor.description]
                out.append([dict(zip(columns, row, strict=True)) for row in cursor.fetchall()])
        self._answer(200, json.dumps(out, default=str).encode())

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        STATEMENTS[body["path"]] = list(body["statements"])
        self._answer(200, b"{}")

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dsn", required=True)
    arguments = parser.parse_args()
    Handler.dsn = arguments.dsn
    ThreadingHTTPServer.request_queue_size = 128  # 32 connections opened at once
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
