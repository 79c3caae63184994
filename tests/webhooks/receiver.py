"""A webhook receiver for quizd's tests, written apart from quizd: it verifies every delivery
with `standardwebhooks` (the Standard Webhooks reference library, from PyPI) and records it.

    python receiver.py [--port PORT]

Listens on 127.0.0.1:PORT (a free port when 0), prints `READY <port>` and serves until its
standard input closes:

- `PUT /_config/<name>` with `{"secrets": [...], "status": 200, "answer_bytes": 0}`: what the
  hook at `/hooks/<name>` verifies with and answers (its status, and a body this long);
- `POST /hooks/<name>`: a delivery; verified with each secret (a list of booleans, in the
  order of the secrets), recorded, answered as configured;
- `GET /_received/<name>`: the deliveries recorded there, in order of arrival.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

LOCK = threading.Lock()
CONFIG = {}
RECEIVED = {}
MAX_BODY = 1 << 20


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            raise ValueError("too large")
        return self.rfile.read(length)

    def _answer(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        if not self.path.startswith("/_config/"):
            return self._answer(404)
        name = self.path[len("/_config/"):]
        config = json.loads(self._body())
        with LOCK:
            CONFIG[name] = config
        self._answer(204)

    def do_GET(self):
        if not self.path.startswith("/_received/"):
            return self._answer(404)
        name = self.path[len("/_received/"):]
        with LOCK:
            got = list(RECEIVED.get(name, []))
        self._answer(200, json.dumps(got).encode())

    def do_POST(self):
        if not self.path.startswith("/hooks/"):
            return self._answer(404)
        name = self.path[len("/hooks/"):]
        body = self._body()
        with LOCK:
            config = dict(CONFIG.get(name, {}))
        headers = {k: v for k, v in self.headers.items()}
        verified = []
        for secret in config.get("secrets", []):
            try:
                Webhook(secret).verify(body, headers)
                verified.append(True)
            except WebhookVerificationError:
                verified.append(False)
        status = config.get("status", 200)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        with LOCK:
            RECEIVED.setdefault(name, []).append({
                "id": self.headers.get("webhook-id"),
                "timestamp": self.headers.get("webhook-timestamp"),
                "signature": self.headers.get("webhook-signature"),
                "content_type": self.headers.get("content-type"),
                "body": payload,
                "verified": verified,
                "answered": status,
            })
        self._answer(status, b"x" * config.get("answer_bytes", 0), "text/plain")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
