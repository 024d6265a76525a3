#!/usr/bin/env python3
"""bench/dashboard.py -- the web dashboard's first paint on a large
cluster, in headless Chromium driven over the DevTools protocol (the
Browser of tests/server/e2e_web.py), against a real `allot server`.

Two controllers in one run: the reference, with no nodes and no jobs, and
the cluster, with --nodes nodes of 8 GPUs registered through the agent
protocol (POST /v1/agent/register with the join token, as bench/e2e's
simulated nodes do; they never sync, and --node-timeout keeps them ready)
and --jobs jobs of one GPU submitted through POST /v1/jobs by 8 clients
on kept connections (the first 8 per node run, the rest stay pending).
For each, the overview page is loaded --reps times, logged in (the token
in the tab's sessionStorage, as after a login), and timed from the
navigation's start (the page's own clock):

  first_paint_ms            the browser's first contentful paint (the
                            page's frame, before any data)
  first_data_ms             the overview drawn with the controller's
                            answers (its figures on the page)
  full_data_ms              its first update done, the last 24 hours'
                            report (asked for last) included

with the sizes of the answers it reads, and for each the time from its
request to its first byte and to its end, in the last load.  One JSON line; the target is
first_data_ms <= 300 on loopback with 1,000 nodes and 100,000 jobs.

Usage: bench/dashboard.py PATH/TO/allot [--nodes N] [--jobs N] [--reps N]
"""
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "server"))
import e2e  # noqa: E402
import e2e_web  # noqa: E402

# Runs in the page before its own scripts: notes when the overview is
# first drawn with the controller's answers (its figures), and when its
# first update is done, the last 24 hours' report included (app.js sets
# body's data-updates after each).
PROBE = """
(() => {
  const seen = () => {
    if (window.__firstData === undefined &&
        document.querySelector('#page-overview .kpis')) {
      window.__firstData = performance.now();
    }
    if (window.__fullData === undefined && document.body &&
        Number(document.body.dataset.updates) >= 1) {
      window.__fullData = performance.now();
    }
  };
  new MutationObserver(seen).observe(document, {
    subtree: true, attributes: true, attributeFilter: ['data-updates'],
    childList: true });
})();
"""


def conn(c):
    host, port = c.url.split("//")[1].rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=60)


def post(h, token, path, body):
    h.request("POST", path, json.dumps(body),
              {"Authorization": "Bearer " + token,
               "Content-Type": "application/json"})
    r = h.getresponse()
    r.read()
    return r.status


def register(c, n):
    h = conn(c)
    for i in range(n):
        gpus = [{"uuid": "GPU-b-%05d-%d" % (i, g), "model": "H100-80GB",
                 "mem_bytes": 85899345920, "numa": g // 4, "nvlink": 0}
                for g in range(8)]
        s = post(h, c.join, "/v1/agent/register", {
            "name": "sim-%05d" % i, "addr": "127.0.0.1", "emulated": True,
            "cpu_milli": 64000, "mem_bytes": 512 << 30, "gpus": gpus})
        if s != 200:
            raise e2e.Fail("register sim-%05d: %s" % (i, s))
    h.close()


def submit(c, n, clients=8):
    failed = []

    def worker(k):
        h = conn(c)
        for i in range(k, n, clients):
            s = post(h, c.admin, "/v1/jobs", {
                "command": ["true"], "gpus": 1, "name": "j%d" % i})
            if s != 201:
                failed.append(s)
                return
        h.close()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if failed:
        raise e2e.Fail("submissions refused: %s" % failed[:5])


def measure(c, root, reps):
    """Loads the overview reps times; medians and the answers' sizes."""
    # The browser takes its pipes as descriptors 3 and 4 from a shell
    # (dash: one digit): ours must be from 5 to 9, so the lowest free
    # descriptors below 5 are taken for the while.
    pad = []
    while True:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd >= 5:
            os.close(fd)
            break
        pad.append(fd)
    try:
        br = e2e_web.Browser(root)
    finally:
        for fd in pad:
            os.close(fd)
    try:
        br.size(1280, 800)
        br.call("Page.addScriptToEvaluateOnNewDocument", source=PROBE)
        br.call("Page.navigate", url=c.url + "/")
        br.until("document.readyState === 'complete'", "the login page")
        br.js("sessionStorage.setItem('allot.token', %s); true"
              % json.dumps(c.admin))
        paint, data, full = [], [], []
        for _ in range(reps + 1):  # the first warms the browser's cache
            br.js("window.__old = true; true")
            br.call("Page.reload")
            br.until("window.__old === undefined && "
                     "window.__fullData !== undefined", "the overview",
                     timeout=120)
            fcp = br.js("(performance.getEntriesByName("
                        "'first-contentful-paint')[0] || {}).startTime")
            paint.append(fcp if fcp is not None else float("nan"))
            data.append(br.js("window.__firstData"))
            full.append(br.js("window.__fullData"))
        sizes = br.js("performance.getEntriesByType('resource')"
                      ".filter(e => e.name.includes('/v1/'))"
                      ".map(e => [e.name.replace(location.origin, '')"
                      ".split('?')[0], e.encodedBodySize, e.startTime,"
                      " e.responseStart, e.responseEnd])")
        errors = list(br.errors)
    finally:
        br.close()
    if errors:
        raise e2e.Fail("the page's errors: %s" % errors)
    kib, ms = {}, {}
    for name, size, start, first, end in sizes or []:
        kib[name] = round(size / 1024, 1)
        # The last load's: from the request's start to its first byte,
        # and to its last (the answer's transfer).
        ms[name] = [round(first - start, 1), round(end - start, 1)]
    return (statistics.median(paint[1:]), statistics.median(data[1:]),
            statistics.median(full[1:]), kib, ms)


def cluster(allot, nodes, jobs, reps):
    root = tempfile.mkdtemp(prefix="allot-bench-dashboard-")
    c = e2e.Cluster(allot, root)
    try:
        c.start_server("--node-timeout", "86400000", "--log-level", "warn")
        t0 = time.monotonic()
        register(c, nodes)
        reg_s = time.monotonic() - t0
        t0 = time.monotonic()
        submit(c, jobs)
        sub_s = time.monotonic() - t0
        paint, data, full, kib, ms = measure(c, root, reps)
    finally:
        c.stop()
    return {"nodes": nodes, "jobs": jobs, "register_s": round(reg_s, 1),
            "submit_s": round(sub_s, 1), "first_paint_ms": round(paint, 1),
            "first_data_ms": round(data, 1), "full_data_ms": round(full, 1),
            "answers_kib": kib,
            "answers_first_byte_and_end_ms": ms}


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    allot = os.path.abspath(args[0])
    opts = {"--nodes": 1000, "--jobs": 100000, "--reps": 5}
    rest = args[1:]
    while rest:
        if len(rest) < 2 or rest[0] not in opts or not rest[1].isdigit():
            print("usage: bench/dashboard.py PATH/TO/allot [--nodes N] "
                  "[--jobs N] [--reps N]", file=sys.stderr)
            return 2
        opts[rest[0]] = int(rest[1])
        rest = rest[2:]
    reps = max(1, opts["--reps"])
    ref = cluster(allot, 0, 0, reps)
    big = cluster(allot, opts["--nodes"], opts["--jobs"], reps)
    print(json.dumps({
        "bench": "dashboard", "reps": reps, "cpus": os.cpu_count(),
        "reference": ref, "cluster": big,
        "first_data_over_reference":
            round(big["first_data_ms"] / ref["first_data_ms"], 2)
            if ref["first_data_ms"] else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
