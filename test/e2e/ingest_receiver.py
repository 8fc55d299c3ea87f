#!/usr/bin/env python3
"""A stand-in for Pyroscope's ingest endpoint, for every_test.sh: POST /ingest?name=&from=&until=
&format=&sampleRate= with a body. Each request is saved as OUTDIR/N.pb.gz and logged as one line of
OUTDIR/log ("N status name from until format sampleRate bytes"). The first --fail-first requests
are answered 503 (to exercise the sender's retry). The port it listens on (127.0.0.1, chosen by
the kernel) is written to OUTDIR/port once it listens: the test's readiness signal. Checks of
the payloads are the test's (go tool pprof)."""
import argparse
import http.server
import os
import sys
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--fail-first", type=int, default=0)
    args = ap.parse_args()
    state = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            u = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(u.query)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state["n"] += 1
            n = state["n"]
            status = 503 if n <= args.fail_first else (200 if u.path == "/ingest" else 404)
            if status == 200:
                with open(os.path.join(args.outdir, "%d.pb.gz" % n), "wb") as f:
                    f.write(body)
            with open(os.path.join(args.outdir, "log"), "a") as f:
                f.write("%d %d %s %s %s %s %s %d\n" % (
                    n, status, q.get("name", ["-"])[0], q.get("from", ["-"])[0],
                    q.get("until", ["-"])[0], q.get("format", ["-"])[0],
                    q.get("sampleRate", ["-"])[0], len(body)))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    tmp = os.path.join(args.outdir, "port.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, os.path.join(args.outdir, "port"))
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
