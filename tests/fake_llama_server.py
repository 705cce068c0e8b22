#!/usr/bin/env python3
"""A stand-in for llama.cpp's server, for the model process's unit tests: it takes llama-server's command line,
answers /health, /metrics (the calls being answered), /tokenize and /v1/chat/completions, and fails the way a broken build does, as FAKE_LLAMA_MODE says:

- `ok`: replies "OK";
- `crash-with-repack`: dies with SIGSEGV at its first reply unless started with --no-repack (AMX's crash);
- `crash`: dies with SIGSEGV at every first reply;
- `die-at-load`: exits with status 1 before it answers /health.

FAKE_LLAMA_DELAY_S makes every reply after the first wait that long (a call to cut off). A streamed call gets
FAKE_LLAMA_STREAM_TOKENS tokens, FAKE_LLAMA_TOKEN_DELAY_S apart.

Each process appends its pid and arguments to FAKE_LLAMA_STARTS (a file), so tests count the starts.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = os.environ.get("FAKE_LLAMA_MODE", "ok")
ARGS = sys.argv[1:]
DELAY_S = float(os.environ.get("FAKE_LLAMA_DELAY_S", "0"))
STREAM_TOKENS = int(os.environ.get("FAKE_LLAMA_STREAM_TOKENS", "3"))
TOKEN_DELAY_S = float(os.environ.get("FAKE_LLAMA_TOKEN_DELAY_S", "0"))
replies = 0
processing = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._reply(200, {"status": "ok"})
        elif self.path == "/metrics":
            data = f"llamacpp:requests_processing {processing}\nllamacpp:requests_deferred 0\n".encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/props":
            self._reply(200, {"model_path": ARGS[ARGS.index("--model") + 1]})
        else:
            self._reply(404, {})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path == "/tokenize":
            self._reply(200, {"tokens": list(range(len(body.get("content", "").split())))})
            return
        if MODE == "crash" or (MODE == "crash-with-repack" and "--no-repack" not in ARGS):
            os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(60)  # the signal may reach another thread first: no reply is written before the process dies
        global replies, processing
        replies += 1
        processing += 1
        if replies > 1:
            time.sleep(DELAY_S)
        processing -= 1
        if body.get("stream"):
            self._stream_reply()
            return
        self._reply(
            200,
            {
                "choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            },
        )

    def _stream_reply(self) -> None:
        """A streamed reply of STREAM_TOKENS tokens, TOKEN_DELAY_S apart; each token sent is counted in
        FAKE_LLAMA_TOKENS (a file), so a test sees when a client that closed the stream stopped it."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for n in range(STREAM_TOKENS):
            chunk = {"choices": [{"index": 0, "delta": {"content": "OK " if n == 0 else "ok "}, "finish_reason": None}]}
            try:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            except OSError:  # the client closed the stream: stop generating, as llama-server does
                return
            if tokens := os.environ.get("FAKE_LLAMA_TOKENS"):
                with open(tokens, "a") as record:
                    record.write("t\n")
            time.sleep(TOKEN_DELAY_S)
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 5}}
        self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())


def main() -> None:
    if starts := os.environ.get("FAKE_LLAMA_STARTS"):
        with open(starts, "a") as record:
            record.write(json.dumps({"pid": os.getpid(), "args": ARGS}) + "\n")
    if MODE == "die-at-load":
        sys.exit(1)
    port = int(ARGS[ARGS.index("--port") + 1])
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
