#!/usr/bin/env python3
"""A stand-in for a model server, for the inference services' tests and
benchmark: an HTTP/1.1 server (keep-alive) on $PORT that says who it is.

  GET /health          200 (503 once /sick was asked)
  GET /sick            from now on /health answers 503
  GET /work?ms=N       waits N ms (a model's service time), then answers
                       {"replica": $ALLOT_REPLICA, "version": ..., "pid"}
  POST /work?ms=N      the same, echoing the body's length
  POST /echo           answers the body it got, as it got it
  any /die?mark=PATH   appends a line to PATH; the first replica to get
                       it (PATH did not exist) dies at once, without an
                       answer; later ones answer as /work does
  GET /stream?n=K&ms=N K server-sent events N ms apart, chunked

Environment: PORT (required), ALLOT_REPLICA, REPLICA_VERSION (what
/work reports), REPLICA_START_S (seconds to sleep before listening: a
model's load time), REPLICA_FAIL=1 (exit 3 at once: a broken update).
"""
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


SICK = False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, obj):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.route(b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.route(self.rfile.read(n) if n else b"")

    do_PUT = do_POST

    def route(self, body):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        global SICK
        if u.path == "/health":
            self.answer(503 if SICK else 200, {"ok": not SICK})
        elif u.path == "/echo":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Request-Framing",
                             "chunked" if self.headers.get(
                                 "Transfer-Encoding") else "length")
            self.end_headers()
            self.wfile.write(body)
        elif u.path == "/die":
            mark = q["mark"][0]
            first = not os.path.exists(mark)
            with open(mark, "a") as f:
                f.write("%s %s\n" % (os.environ.get("ALLOT_REPLICA"),
                                     self.command))
            if first:
                os._exit(9)
            self.answer(200, {"replica": os.environ.get("ALLOT_REPLICA"),
                              "body": len(body)})
        elif u.path == "/sick":
            SICK = True
            self.answer(200, {"replica": os.environ.get("ALLOT_REPLICA")})
        elif u.path == "/work":
            time.sleep(float(q.get("ms", ["0"])[0]) / 1000)
            self.answer(200, {"replica": os.environ.get("ALLOT_REPLICA"),
                              "version": os.environ.get("REPLICA_VERSION",
                                                        "1"),
                              "pid": os.getpid(), "body": len(body),
                              "path": self.path})
        elif u.path == "/stream":
            n = int(q.get("n", ["5"])[0])
            ms = float(q.get("ms", ["100"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                ev = ("data: {\"token\": %d, \"t\": %.6f}\n\n"
                      % (i, time.time())).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(ms / 1000)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        else:
            self.answer(404, {"error": "not_found"})


def main():
    if os.environ.get("REPLICA_FAIL") == "1":
        print("replica: failing on purpose", file=sys.stderr)
        return 3
    time.sleep(float(os.environ.get("REPLICA_START_S", "0")))
    srv = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])),
                              Handler)
    srv.daemon_threads = True
    print("replica %s listening on %s" % (os.environ.get("ALLOT_REPLICA"),
                                          os.environ["PORT"]), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
