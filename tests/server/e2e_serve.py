#!/usr/bin/env python3
"""End-to-end tests of inference services, driven as a user would: a real
`allot server` with its router (--router-listen), agents with emulated
GPUs on loopback, `allot serve`, and replicas that are real processes
(replica.py, a small HTTP model stand-in) taking real HTTP requests from
a load generator in this file.  Runs on e2e.py's harness (its Cluster,
checks and runner).

Usage: e2e_serve.py [pg:]SCENARIO PATH/TO/allot
"""
import http.client
import json
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

REPLICA = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "replica.py")


def port_range(c):
    """The first of 200 replica ports that no other test on this machine
    holds while this one runs: a random range below Linux's ephemeral
    ports (32768-60999, where clients' own connections land), taken with
    a lock file kept open by the cluster (two tests that drew the same
    range had one's readiness probe answered by the other's replica)."""
    import fcntl
    for _ in range(1000):
        base = random.randrange(10000, 32000, 200)
        f = open("/tmp/allot-e2e-ports-%d.lock" % base, "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        c.port_locks = getattr(c, "port_locks", []) + [f]
        return base
    raise e2e.Fail("no free range of replica ports")


def start(c, gpus="4xH100-80GB", deserved=4, agents=("n1",), extra=()):
    """A server with a router and replica ports of its own (parallel
    tests on this machine must not share them), agents, and a queue `inf`
    whose deserved quota the replicas use; extra: more server options."""
    base = port_range(c)
    c.start_server("--router-listen", "127.0.0.1:0", "--service-ports",
                   "%d-%d" % (base, base + 199), *extra)
    c.router = open(os.path.join(c.state, "router-url")).read().strip()
    for a in agents:
        c.start_agent(a, gpus)
    c.cli("queue", "set", "inf", "--deserved", "gpu=%d" % deserved)


def svc(c, name):
    s, v = c.api("GET", "/v1/services/" + name)
    check(s == 200, "GET service %s: %s %s" % (name, s, v))
    return v


def events(c, name):
    return [e["event"] for e in svc(c, name)["events"]]


def request(c, name, path="/work?ms=0", token=None, conn=None, body=None):
    """One request through the router: (status, decoded JSON or text)."""
    host = c.router.split("//")[1]
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(host, timeout=60)
    hdr = {"Authorization": "Bearer " + token} if token else {}
    conn.request("POST" if body is not None else "GET",
                 "/s/%s%s" % (name, path), body=body, headers=hdr)
    r = conn.getresponse()
    data = r.read()
    if own:
        conn.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data.decode(errors="replace")


class Load:
    """A bounded load generator: `clients` threads, each sending requests
    back to back on a kept-alive connection; every answer is recorded."""

    def __init__(self, c, name, clients, path="/work?ms=200"):
        self.c, self.name, self.path = c, name, path
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failed = []
        self.seen = {}  # (replica, version) -> count
        self.threads = [threading.Thread(target=self.run, daemon=True)
                        for _ in range(clients)]
        for t in self.threads:
            t.start()

    def run(self):
        host = self.c.router.split("//")[1]
        conn = http.client.HTTPConnection(host, timeout=120)
        while not self.stop_ev.is_set():
            try:
                st, v = request(self.c, self.name, self.path, conn=conn)
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.failed.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection(host, timeout=120)
                continue
            with self.lock:
                if st == 200:
                    self.ok += 1
                    k = (v["replica"], v["version"])
                    self.seen[k] = self.seen.get(k, 0) + 1
                else:
                    self.failed.append("%s %s" % (st, v))
        conn.close()

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(150)
        return self


def ready_count(c, name):
    return sum(1 for r in svc(c, name)["replicas"] if r["state"] == "ready")


# -- scenarios -------------------------------------------------------------

def scenario_serve_scale(c):
    """Cold start, scale up on load, scale down, scale to zero: a service
    with --min 0 has no replica; its first request waits in the router
    while one starts, and gets its answer; 8 clients sending 200 ms
    requests (concurrency 8, target 2) bring it to 4 replicas without a
    failed request; idle, it goes back to zero, and its GPUs with it."""
    start(c)
    c.cli("serve", "create", "m", "--gpus", "1", "--queue", "inf", "--min",
          "0", "--max", "4", "--target-concurrency", "2", "--ready-path",
          "/health", "--public", "--window", "2", "--scale-down-delay", "3",
          "--idle", "4", "--", "python3", REPLICA)
    time.sleep(1)
    check(svc(c, "m")["replicas"] == [], "no replica before a request")
    t0 = time.time()
    st, v = request(c, "m")
    cold = time.time() - t0
    check(st == 200 and "replica" in v,
          "the first request is answered after a cold start: %s %s"
          % (st, v))
    print("  cold start: first answer after %.2f s" % cold)
    load = Load(c, "m", 8)
    gpus = lambda: sum(n["gpus_used"]  # noqa: E731
                       for n in c.api("GET", "/v1/nodes")[1]["nodes"])
    wait_for(lambda: ready_count(c, "m") >= 4, 40, "4 ready replicas")
    time.sleep(2)
    check(gpus() == 4, "4 replicas hold 4 GPUs: %d" % gpus())
    load.stop()
    check(not load.failed, "no failed request during scale-up: %s"
          % load.failed[:5])
    reps = {k[0] for k in load.seen}
    check(len(reps) >= 4, "requests went to every replica: %s" % load.seen)
    s = svc(c, "m")
    check(s["rise_s"] > 0, "the load rise to ready time is measured: %s"
          % s["rise_s"])
    print("  %d requests over replicas %s; load rise to ready %.2f s "
          "(replica start %.2f s)" % (load.ok, sorted(reps), s["rise_s"],
                                      s["start_s"]))
    # A light load (1 client) scales down to 1 without a failed request.
    light = Load(c, "m", 1)
    wait_for(lambda: len(svc(c, "m")["replicas"]) == 1, 40,
             "a scale down to 1 replica")
    light.stop()
    check(not light.failed, "no failed request during scale-down: %s"
          % light.failed[:5])
    wait_for(lambda: svc(c, "m")["replicas"] == [], 30,
             "a scale to zero after idle")
    wait_for(lambda: gpus() == 0, 10, "the GPUs back in the pool")
    ev = events(c, "m")
    check(any(e.startswith("scale to zero") for e in ev),
          "the history shows the scale to zero: %s" % ev)
    # And a cold start again.
    st, v = request(c, "m")
    check(st == 200, "a request after scale to zero: %s %s" % (st, v))
    p = c.cli("serve", "show", "m")
    check("scale up 0 -> 1" in p.stdout and "ready" in p.stdout,
          "allot serve show prints the history:\n%s" % p.stdout)
    p = c.cli("serve", "ls")
    check(p.stdout.splitlines()[1].split()[0] == "m", "allot serve ls:\n%s"
          % p.stdout)
    st, text = c.api("GET", "/metrics")
    check(st == 200 and 'allot_service_requests_total{service="m"}' in text
          and 'allot_service_replicas_ready{service="m"}' in text,
          "/metrics has the service's series: %s" % text[-800:])
    c.cli("serve", "delete", "m")
    s, v = c.api("GET", "/v1/services/m")
    check(s == 404, "deleted: %s" % s)
    wait_for(lambda: request(c, "m")[0] == 404, 5, "404 once deleted")


def scenario_serve_update(c):
    """A rolling update under load replaces the replicas one at a time
    with no failed request, then every answer comes from the new version;
    an update whose replicas fail rolls back, still without a failed
    request."""
    start(c)
    c.cli("serve", "create", "u", "--gpus", "1", "--queue", "inf", "--min",
          "2", "--max", "2", "--ready-path", "/health", "--public",
          "--drain", "10", "--", "env", "REPLICA_VERSION=1",
          "REPLICA_START_S=0.5", "python3", REPLICA)
    wait_for(lambda: ready_count(c, "u") == 2, 30, "2 ready replicas")
    load = Load(c, "u", 4, "/work?ms=100")
    time.sleep(1)
    p = c.cli("serve", "update", "u", "--", "env", "REPLICA_VERSION=2",
              "REPLICA_START_S=0.5", "python3", REPLICA)
    check("generation 2" in p.stdout, "update: %s" % p.stdout)
    wait_for(lambda: (lambda s: len(s["replicas"]) == 2 and
                      all(r["gen"] == 2 and r["state"] == "ready"
                          for r in s["replicas"]))(svc(c, "u")),
             60, "2 ready replicas of generation 2")
    with load.lock:
        load.seen.clear()
    time.sleep(1)
    load.stop()
    check(not load.failed, "no failed request during the update: %s"
          % load.failed[:5])
    check(load.seen and all(k[1] == "2" for k in load.seen),
          "after the update, version 2 answers: %s" % load.seen)
    ev = events(c, "u")
    check(sum("draining (replaced by a new generation)" in e for e in ev)
          == 2, "two old replicas drained: %s" % ev)
    # A broken update: its replicas exit at once; rolled back.
    load = Load(c, "u", 4, "/work?ms=100")
    c.cli("serve", "update", "u", "--", "env", "REPLICA_FAIL=1", "python3",
          REPLICA)
    wait_for(lambda: any("rolled back" in e for e in events(c, "u")), 60,
             "a rollback")
    wait_for(lambda: (lambda s: len(s["replicas"]) == 2 and
                      all(r["state"] == "ready" for r in s["replicas"]))(
                          svc(c, "u")), 30, "2 ready replicas again")
    load.stop()
    check(not load.failed, "no failed request during a failed update: %s"
          % load.failed[:5])
    check(all(k[1] == "2" for k in load.seen),
          "version 2 kept answering: %s" % load.seen)
    print("  %d requests, none failed; rolled back: %s" % (
        load.ok, [e for e in events(c, "u") if "rolled back" in e][0]))


def scenario_serve_kill(c):
    """A killed replica is replaced (the history says so) and requests go
    on: those it held are retried on another replica or failed cleanly
    (an HTTP error, never a hang).  A replica whose ready path fails
    leaves the rotation and is replaced."""
    start(c)
    c.cli("serve", "create", "k", "--gpus", "1", "--queue", "inf", "--min",
          "2", "--max", "2", "--ready-path", "/health", "--public", "--",
          "python3", REPLICA)
    wait_for(lambda: ready_count(c, "k") == 2, 30, "2 ready replicas")
    pids = set()
    for _ in range(10):
        st, v = request(c, "k")
        pids.add((v["replica"], v["pid"]))
    victim = sorted(pids)[0]
    load = Load(c, "k", 4, "/work?ms=50")
    time.sleep(0.5)
    os.kill(victim[1], signal.SIGKILL)
    wait_for(lambda: any("replica %s: job" % victim[0] in e and "replaced"
                         in e for e in events(c, "k")), 20,
             "the history to show the replacement")
    wait_for(lambda: ready_count(c, "k") == 2, 30, "2 ready replicas again")
    time.sleep(1)
    load.stop()
    # What a request held by the killed replica got: an error answer
    # (the connection reset mid-answer) at worst; most are retried.
    check(len(load.failed) <= 4, "at most the killed replica's requests "
          "under way failed: %s" % load.failed)
    check(load.ok > 20, "requests went on: %d" % load.ok)
    st, v = request(c, "k")
    check(st == 200, "served after the replacement: %s" % st)
    print("  %d requests, %d failed (held by the killed replica)"
          % (load.ok, len(load.failed)))
    # A replica that fails its checks leaves the rotation, then is
    # replaced; requests go on meanwhile.
    st, v = request(c, "k", "/sick")
    sick = v["replica"]
    wait_for(lambda: any("replica %s: failed its checks" % sick in e
                         for e in events(c, "k")), 30,
             "the history to show the failed checks")
    for _ in range(10):
        st, v = request(c, "k")
        check(st == 200 and v["replica"] != sick,
              "requests avoid the sick replica: %s %s" % (st, v))
    wait_for(lambda: ready_count(c, "k") == 2 and
             sick not in [str(r["replica"]) for r in svc(c, "k")["replicas"]],
             30, "2 ready replicas without the sick one")


def scenario_serve_stream(c):
    """A token stream (chunked server-sent events) passes through the
    router chunk by chunk: the first event arrives long before the last
    is sent.  The service's own port (--port) takes its requests too.  A private service needs a token: none or a stranger's is
    401, the owner's or an admin's passes."""
    start(c)
    own = e2e.free_port()
    c.cli("serve", "create", "s", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--port", str(own), "--",
          "python3", REPLICA)
    wait_for(lambda: ready_count(c, "s") == 1, 30, "a ready replica")
    # Its own port takes its requests without /s/NAME.
    conn = http.client.HTTPConnection("127.0.0.1", own, timeout=30)
    conn.request("GET", "/work?ms=1",
                 headers={"Authorization": "Bearer " + c.admin})
    r = conn.getresponse()
    v = json.loads(r.read())
    conn.close()
    check(r.status == 200 and v["path"] == "/work?ms=1",
          "the service's own port: %s %s" % (r.status, v))
    st, v = request(c, "s")
    check(st == 401, "a private service without a token: %s %s" % (st, v))
    st, v = request(c, "s", token="al_0000000000000000_" + "0" * 32)
    check(st == 401, "with a bad token: %s" % st)
    st, v = request(c, "s", token=c.admin)
    check(st == 200, "with the admin's token: %s %s" % (st, v))
    host = c.router.split("//")[1]
    conn = http.client.HTTPConnection(host, timeout=30)
    conn.request("GET", "/s/s/stream?n=5&ms=400",
                 headers={"Authorization": "Bearer " + c.admin})
    t0 = time.time()
    r = conn.getresponse()
    check(r.status == 200 and r.getheader("Transfer-Encoding") == "chunked",
          "a chunked stream: %s %s" % (r.status, r.getheaders()))
    arrivals = []
    buf = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            arrivals.append(time.time() - t0)
    conn.close()
    check(len(arrivals) == 5, "5 events: %s" % arrivals)
    check(arrivals[0] < 1.0 and arrivals[-1] - arrivals[0] > 1.2,
          "events arrive as they are sent, not at the end: %s" % arrivals)
    # A POST body goes through whole.
    st, v = request(c, "s", "/work", token=c.admin, body=b"x" * 100000)
    check(st == 200 and v["body"] == 100000, "a POST body: %s %s" % (st, v))
    # Expect: 100-continue is answered before the body is sent.
    import socket
    host, port = c.router.split("//")[1].rsplit(":", 1)
    so = socket.create_connection((host, int(port)), timeout=10)
    so.sendall(b"POST /s/s/work HTTP/1.1\r\nHost: x\r\nAuthorization: "
               b"Bearer " + c.admin.encode() + b"\r\nContent-Length: 5\r\n"
               b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
    so.settimeout(5)
    first = so.recv(100)
    check(first.startswith(b"HTTP/1.1 100 Continue"),
          "100 Continue before the body: %r" % first)
    so.sendall(b"hello")
    rest = b""
    while True:
        k = so.recv(4096)
        if not k:
            break
        rest += k
    so.close()
    check(b" 200 " in rest.split(b"\r\n")[0] and b'"body": 5' in rest,
          "the answer after 100 Continue: %r" % rest)
    # An HTTP/1.0 client asking for keep-alive (as ab -k does) keeps its
    # connection for a second request; one asking for close gets it.
    so = socket.create_connection((host, int(port)), timeout=10)
    req = (b"GET /s/s/work HTTP/1.0\r\nAuthorization: Bearer " +
           c.admin.encode() + b"\r\nConnection: keep-alive\r\n\r\n")
    for k in range(2):
        so.sendall(req)
        head = b""
        while b"\r\n\r\n" not in head:
            got = so.recv(4096)
            check(got, "HTTP/1.0 keep-alive: answer %d came" % k)
            head += got
        hdr, rest = head.split(b"\r\n\r\n", 1)
        check(b"Connection: keep-alive" in hdr,
              "HTTP/1.0 keep-alive is said: %r" % hdr)
        n = int(hdr.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(rest) < n:
            rest += so.recv(4096)
    so.sendall(req.replace(b"keep-alive", b"close"))
    data = b""
    while True:
        got = so.recv(4096)
        if not got:
            break
        data += got
    so.close()
    check(b"Connection: close" in data and b" 200 " in data[:20],
          "Connection: close is kept: %r" % data[:200])
    print("  events at %s s" % ", ".join("%.2f" % a for a in arrivals))


def scenario_serve_reclaim(c):
    """GPUs lent to training go back to a service scaling up: a train job
    borrows the whole node (queue `inf` deserves 4 GPUs but lent them);
    the service's first request makes a replica that reclaims one, and
    the request is answered."""
    start(c)
    c.cli("queue", "set", "research", "--deserved", "gpu=0")
    big = c.submit("--queue", "research", "--gpus", "4", "--", "sleep",
                   "300")
    c.wait_state(big, "running")
    c.cli("serve", "create", "r", "--gpus", "1", "--queue", "inf", "--min",
          "0", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    st, v = request(c, "r")
    check(st == 200, "answered after reclaiming a GPU: %s %s" % (st, v))
    j = c.job(big)
    check(j["restart_count"] >= 1 or j["state"] != "running",
          "the borrowing train job was evicted: %s" % j["state"])
    print("  train job %d evicted (%s, restarts %d); the replica runs"
          % (big, j["state"], j["restart_count"]))


def scenario_serve_store(c):
    """A service survives a controller restart (kill -9) with its
    replicas: the same jobs, ready again, serving; bad bodies are
    refused with a reason."""
    start(c)
    c.cli("serve", "create", "p", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    wait_for(lambda: ready_count(c, "p") == 1, 30, "a ready replica")
    job = svc(c, "p")["replicas"][0]["job"]
    c.kill_server()
    other = port_range(c)
    c.start_server("--router-listen", c.router.split("//")[1],
                   "--service-ports", "%d-%d" % (other, other + 100))
    wait_for(lambda: ready_count(c, "p") == 1, 30, "ready after a restart")
    check(svc(c, "p")["replicas"][0]["job"] == job, "the same replica job")
    st, v = request(c, "p")
    check(st == 200, "served after a restart: %s %s" % (st, v))
    # Settings alone change at once, with no new generation.
    p = c.cli("serve", "update", "p", "--max", "3", "--target-concurrency",
              "8")
    s = svc(c, "p")
    check("generation 1" in p.stdout and s["max"] == 3 and
          s["target_concurrency"] == 8 and s["replicas"][0]["job"] == job,
          "settings changed in place: %s %s" % (p.stdout, s))
    for body, what in (({"name": "x"}, "command"),
                       ({"name": "x", "command": ["a"], "min": 5, "max": 2},
                        "min"),
                       ({"name": "x", "command": ["a"], "queue": "nope"},
                        "queue"),
                       ({"name": "x y", "command": ["a"]}, "name"),
                       ({"name": "x", "command": ["a"], "bogus": 1},
                        "bogus"),
                       ({"name": "p", "command": ["a"]}, "exists")):
        s, v = c.api("POST", "/v1/services", body)
        check(s in (400, 409) and what in v.get("message", ""),
              "refused %s: %s %s" % (body, s, v))
    # A service's replicas go to a queue that takes its owner's jobs.
    c.cli("queue", "set", "closed", "--deserved", "gpu=1", "--members",
          "alice")
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    p = c.cli("serve", "create", "b", "--queue", "closed", "--", "true",
              token=bob, ok=False)
    check(p.returncode != 0 and "not a member" in p.stderr,
          "a queue that does not take bob's jobs: %s" % p.stderr)
    p = c.cli("serve", "create", "b", "--queue", "inf", "--", "true",
              token=bob)
    check(svc(c, "b")["owner"] == "bob", "bob's service in an open queue")
    p = c.cli("serve", "create", "x", "--min", "3", "--max", "1", "--",
              "true", ok=False)
    check(p.returncode != 0 and "min" in p.stderr,
          "the CLI says why: %s" % p.stderr)


def scenario_serve_routers(c):
    """Two `allot router` processes beside a controller that runs no router
    of its own: a cold start through one of them (its held request is
    reported as load, and the controller starts a replica), load through
    both scaling the service up (their reports add up), and both keep
    routing by their last table while the controller is down."""
    base = port_range(c)
    c.start_server("--service-ports", "%d-%d" % (base, base + 199))
    c.start_agent("n1", "4xH100-80GB")
    c.cli("queue", "set", "inf", "--deserved", "gpu=4")
    tokfile = os.path.join(c.root, "admin-token")
    with open(tokfile, "w") as f:
        f.write(c.admin + "\n")
    urls = []
    for name in ("ra", "rb"):
        uf = os.path.join(c.root, name + ".url")
        c.spawn("router-" + name, ["router", "--server", c.url,
                                   "--token-file", tokfile, "--listen",
                                   "127.0.0.1:0", "--name", name,
                                   "--url-file", uf])
        wait_for(lambda: os.path.exists(uf) and open(uf).read().strip(), 10,
                 "router %s to listen" % name)
        urls.append(open(uf).read().strip())
    c.cli("serve", "create", "x", "--gpus", "1", "--queue", "inf", "--min",
          "0", "--max", "4", "--target-concurrency", "2", "--ready-path",
          "/health", "--public", "--window", "2", "--scale-down-delay", "3",
          "--", "python3", REPLICA)
    c.router = urls[1]
    t0 = time.time()
    # Until the router has read the table (100 ms), 404.
    st, v = wait_for(lambda: (lambda a: a if a[0] != 404 else None)(
        request(c, "x")), 10, "router rb to learn the service")
    check(st == 200, "a cold start through router rb: %s %s" % (st, v))
    print("  cold start through a router process: %.2f s" % (
        time.time() - t0))
    check(len(svc(c, "x")["replicas"]) == 1, "one replica started")
    c.router = urls[0]
    la = Load(c, "x", 4)
    c.router = urls[1]
    lb = Load(c, "x", 4)
    wait_for(lambda: ready_count(c, "x") >= 4, 40,
             "4 ready replicas from both routers' load")
    c.kill_server()
    time.sleep(1)
    la.stop()
    lb.stop()
    check(not la.failed and not lb.failed,
          "no failed request, the controller gone included: %s %s"
          % (la.failed[:3], lb.failed[:3]))
    check(la.ok > 10 and lb.ok > 10, "both routers served: %d %d"
          % (la.ok, lb.ok))
    print("  %d + %d requests through two routers" % (la.ok, lb.ok))


def raw(c, data, timeout=10):
    """Sends data on a fresh connection to the router and reads until it
    closes; what came back."""
    import socket
    host, port = c.router.split("//")[1].rsplit(":", 1)
    so = socket.create_connection((host, int(port)), timeout=timeout)
    so.sendall(data)
    got = b""
    while True:
        k = so.recv(65536)
        if not k:
            break
        got += k
    so.close()
    return got


def scenario_serve_chunked(c):
    """A request body sent chunked (Transfer-Encoding: chunked, as curl
    sends a file it is told to) reaches the replica whole, decoded, with a
    Content-Length; malformed chunking is a 400 that says why, a body
    over the limit a 413, another transfer coding a 501; a pipelined
    request after a chunked one is answered too."""
    start(c)
    c.cli("serve", "create", "c", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    wait_for(lambda: ready_count(c, "c") == 1, 30, "a ready replica")
    src = os.path.join(c.root, "body.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(300000) + b"0\r\n\r\n\n\r\n")
    out = os.path.join(c.root, "echo.bin")
    import subprocess
    p = subprocess.run(["curl", "-sS", "-D", "-", "-o", out, "-H",
                        "Transfer-Encoding: chunked", "--data-binary",
                        "@" + src, c.router + "/s/c/echo"],
                       capture_output=True, timeout=60)
    head = p.stdout.decode(errors="replace")
    check(p.returncode == 0 and " 200 " in head.split("\r\n")[0],
          "curl's chunked upload: rc %d %s %s" % (p.returncode, head,
                                                  p.stderr))
    check(open(out, "rb").read() == open(src, "rb").read(),
          "the replica echoed the body byte for byte")
    check("X-Request-Framing: length" in head,
          "the replica got it with a Content-Length: %s" % head)
    hdr = (b"POST /s/c/echo HTTP/1.1\r\nHost: x\r\n"
           b"Transfer-Encoding: chunked\r\n")
    # Extensions and trailers are taken (the trailers dropped); a
    # pipelined request after the body is answered in turn.
    got = raw(c, hdr + b"\r\n3;x=y\r\nabc\r\n0002\r\nde\r\n0\r\nX-T: 1\r\n"
              b"\r\nGET /s/c/work HTTP/1.1\r\nHost: x\r\nConnection: close"
              b"\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 200 ") and b"\r\n\r\nabcde" in got,
          "extensions and trailers: %r" % got[:300])
    check(got.count(b"HTTP/1.1 200 ") == 2 and b'"body": 0' in got,
          "the pipelined request after it: %r" % got)
    got = raw(c, hdr + b"Connection: close\r\n\r\n0\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 200 ") and
          b"Content-Length: 0\r\n" in got, "an empty body: %r" % got[:300])
    bad = [
        (b"\r\n5\nhello\r\n0\r\n\r\n", b"400", b"CRLF"),
        (b"\r\n5\r\nhelloXX\r\n0\r\n\r\n", b"400", b"followed by CRLF"),
        (b"\r\nzz\r\n", b"400", b"without its size"),
        (b"\r\n3 2\r\nabc\r\n0\r\n\r\n", b"400", b"malformed chunk size"),
        (b"\r\n3 x\r\nabc\r\n0\r\n\r\n", b"400", b"malformed chunk size"),
        (b"\r\n" + b"1" * 17 + b"\r\n", b"400", b"16 hex digits"),
        (b"\r\n2000000\r\n", b"413", b"over the limit"),
        (b"Content-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n", b"400",
         b"both"),
    ]
    for body, status, why in bad:
        got = raw(c, hdr + body)
        check(got.startswith(b"HTTP/1.1 " + status) and why in got,
              "%r: %s %r, got %r" % (body, status, why, got[:300]))
    # White space before ';' is taken (BWS).
    got = raw(c, hdr + b"Connection: close\r\n\r\n3 \t;x\r\nabc\r\n0\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 200 ") and got.endswith(b"\r\n\r\nabc"),
          "white space before an extension: %r" % got[:300])
    # A Content-Length over the limit: 413 too_large, as a chunked one.
    got = raw(c, b"POST /s/c/echo HTTP/1.1\r\nHost: x\r\nContent-Length: "
              b"16777217\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 413 ") and b'"too_large"' in got,
          "a Content-Length over 16 MiB: %r" % got[:300])
    got = raw(c, b"POST /s/c/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
              b"gzip, chunked\r\n\r\n0\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 501 "), "another coding: %r" % got[:200])
    # A client that waits for 100 Continue before its body is told at
    # once that no such service is there: no 100, no body read.
    import socket
    host, port = c.router.split("//")[1].rsplit(":", 1)
    for framing in (b"Content-Length: 1000000", b"Transfer-Encoding: chunked"):
        so = socket.create_connection((host, int(port)), timeout=10)
        so.sendall(b"POST /s/nosuch/echo HTTP/1.1\r\nHost: x\r\n" +
                   framing + b"\r\nExpect: 100-continue\r\n\r\n")
        got = so.recv(65536)
        so.close()
        check(got.startswith(b"HTTP/1.1 404 ") and
              b"Connection: close" in got,
              "Expect: 100-continue to no service (%s): %r" % (framing, got))
    # An HTTP/1.0 client cannot read chunks: a chunked answer (a token
    # stream) reaches it decoded, ended by the close, with no 1xx.
    got = raw(c, b"GET /s/c/stream?n=3&ms=10 HTTP/1.0\r\nHost: x\r\n"
              b"Expect: 100-continue\r\n\r\n")
    head, _, body = got.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 200 ") and
          b"Transfer-Encoding" not in head and b"Connection: close" in head,
          "a stream to an HTTP/1.0 client: %r" % got[:400])
    events = body.split(b"\n\n")
    check(len(events) == 4 and events[-1] == b"" and
          all(e.startswith(b"data: {") for e in events[:3]),
          "its events, decoded: %r" % body)
    # The replica is still fine, and nothing it got was cut.
    st, v = request(c, "c", "/work", body=b"y" * 1000)
    check(st == 200 and v["body"] == 1000, "served after: %s %s" % (st, v))


def scenario_serve_smuggle(c):
    """A header line a replica could read otherwise than the router (a
    bare LF or CR in it, white space before its colon, a control byte)
    is a 400: it cannot hide a framing header from the router and
    smuggle a request to the replica inside a body."""
    start(c)
    c.cli("serve", "create", "m", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    wait_for(lambda: ready_count(c, "m") == 1, 30, "a ready replica")
    mark = os.path.join(c.root, "smuggled")
    open(mark, "w").close()  # there: /die answers instead of dying
    inner = ("GET /die?mark=%s HTTP/1.1\r\nHost: x\r\n\r\n"
             % mark).encode()
    cases = [
        # Python's http.server (the replica) splits lines at a bare LF,
        # so it takes the first Content-Length (0) and reads the body
        # as a request of its own.
        (b"X-A: 1\nContent-Length: 0\r\nContent-Length: %d\r\n"
         % len(inner), b"a control byte in a header"),
        (b"X-A: 1\rContent-Length: 0\r\nContent-Length: %d\r\n"
         % len(inner), b"a control byte in a header"),
        (b"Content-Length : 0\r\nContent-Length: %d\r\n" % len(inner),
         b"malformed header name"),
        (b"Transfer-Encoding\t: chunked\r\nContent-Length: %d\r\n"
         % len(inner), b"malformed header name"),
        (b"X-A: a\x00b\r\nContent-Length: %d\r\n" % len(inner),
         b"a control byte in a header"),
    ]
    for hdrs, why in cases:
        got = raw(c, b"POST /s/m/echo HTTP/1.1\r\nHost: x\r\n" + hdrs +
                  b"Connection: close\r\n\r\n" + inner)
        time.sleep(0.3)
        with open(mark) as f:
            ran = f.read()
        check(ran == "", "a request smuggled past the router ran: %r "
              "(headers %r, answer %r)" % (ran, hdrs, got[:300]))
        check(got.startswith(b"HTTP/1.1 400 ") and why in got,
              "%r: 400 %r, got %r" % (hdrs, why, got[:300]))
    # Tabs in values stay fine, and the replica still serves.
    got = raw(c, b"GET /s/m/work HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\n"
              b"Connection: close\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 200 "), "a tab in a value: %r" % got)


def scenario_serve_retry(c):
    """A request whose replica dies after taking it whole is sent to
    another replica only when that is safe: a POST gets 502 and ran once;
    a POST with an Idempotency-Key, and a GET, are retried and answered."""
    start(c)
    c.cli("serve", "create", "r", "--gpus", "1", "--queue", "inf", "--min",
          "2", "--max", "2", "--ready-path", "/health", "--public", "--",
          "python3", REPLICA)
    host = c.router.split("//")[1]

    def send(method, mark, headers):
        wait_for(lambda: ready_count(c, "r") == 2, 60, "2 ready replicas")
        conn = http.client.HTTPConnection(host, timeout=60)
        conn.request(method, "/s/r/die?mark=" + mark, body=b"z" * 100,
                     headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        with open(mark) as f:
            runs = f.read().splitlines()
        return r.status, data, runs

    m = os.path.join(c.root, "post")
    st, data, runs = send("POST", m, {})
    check(st == 502 and b"Idempotency-Key" in data,
          "a POST its replica died with: 502: %s %s" % (st, data))
    check(len(runs) == 1, "the POST ran once, not again elsewhere: %s" % runs)
    m = os.path.join(c.root, "post-key")
    st, data, runs = send("POST", m, {"Idempotency-Key": "k-1"})
    check(st == 200 and len(runs) == 2 and runs[0] != runs[1],
          "a POST with an Idempotency-Key is retried: %s %s %s"
          % (st, data, runs))
    # An empty key is none: the replica could not tell a repeat by it.
    m = os.path.join(c.root, "post-empty-key")
    st, data, runs = send("POST", m, {"Idempotency-Key": ""})
    check(st == 502 and len(runs) == 1,
          "a POST with an empty Idempotency-Key is not retried: %s %s %s"
          % (st, data, runs))
    m = os.path.join(c.root, "put")
    st, data, runs = send("PUT", m, {})
    check(st == 200 and len(runs) == 2,
          "a PUT is retried: %s %s %s" % (st, data, runs))


def scenario_serve_slowhead(c):
    """A client that never finishes its request head is answered 408 and
    closed after the head deadline (--router-head-timeout), and meanwhile
    other requests are served; the deadline runs from a kept-alive
    connection's next first bytes, not over its silence between
    requests."""
    import socket
    start(c, extra=("--router-head-timeout", "1500"))
    c.cli("serve", "create", "h", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    wait_for(lambda: ready_count(c, "h") == 1, 30, "a ready replica")
    host, port = c.router.split("//")[1].rsplit(":", 1)

    def dial():
        return socket.create_connection((host, int(port)), timeout=20)

    def answer(so):
        got = b""
        while True:
            k = so.recv(65536)
            if not k:
                return got
            got += k

    # Half a head, more clients than one, and one that says nothing.
    slow = [dial() for _ in range(8)]
    for so in slow:
        so.sendall(b"GET /s/h/work HTTP/1.1\r\nHost: x\r\n")
    silent = dial()
    # Other requests go through while they hang.
    for i in range(20):
        st, v = request(c, "h")
        check(st == 200, "request %d beside slow clients: %s %s" % (i, st, v))
    for so in slow + [silent]:
        so.setblocking(False)
        try:
            early = so.recv(1)
        except BlockingIOError:
            early = None
        check(early is None, "a slow client answered before its head "
              "deadline or closed: %r" % early)
        so.setblocking(True)
        so.settimeout(20)
    for so in slow + [silent]:
        got = answer(so)
        so.close()
        check(got.startswith(b"HTTP/1.1 408 ") and b"Connection: close" in got
              and b"1500 ms" in got, "a slow head: 408, got %r" % got[:300])
    # A kept-alive connection idle longer than the deadline still works;
    # half of its next head is cut off at the deadline.
    so = dial()
    req = b"GET /s/h/work HTTP/1.1\r\nHost: x\r\n\r\n"
    for i in range(2):
        so.sendall(req)
        got = b""
        while b"\r\n\r\n" not in got:
            k = so.recv(65536)
            check(k != b"", "the router closed a kept-alive connection "
                  "that was only idle (request %d): %r" % (i, got))
            got += k
        check(got.startswith(b"HTTP/1.1 200 "), "kept-alive request %d: %r"
              % (i, got[:200]))
        head, _, body = got.partition(b"\r\n\r\n")
        n = int([ln.split(b":")[1] for ln in head.split(b"\r\n")
                 if ln.lower().startswith(b"content-length:")][0])
        while len(body) < n:
            body += so.recv(65536)
        time.sleep(2.5)  # over the deadline, between requests
    so.sendall(b"GET /s/h/work HTTP/1.1\r\n")
    got = answer(so)
    so.close()
    check(got.startswith(b"HTTP/1.1 408 "),
          "half of a kept-alive connection's next head: 408, got %r"
          % got[:300])


def scenario_serve_slice(c):
    """The router's threads (each client connection's, the accepting and
    the probing one) ask the kernel for a 100 us time slice, so that a
    request waking one preempts longer work on a busy CPU
    (docs/serving.md).  Read back from
    /proc/PID/task/TID/sched (se.slice), which Linux shows from 6.12 on;
    skipped where it does not."""
    start(c)
    c.cli("serve", "create", "t", "--gpus", "1", "--queue", "inf", "--min",
          "1", "--ready-path", "/health", "--public", "--", "python3",
          REPLICA)
    wait_for(lambda: ready_count(c, "t") == 1, 30, "a ready replica")
    # Three connections: their threads live while they are open.
    conns = [http.client.HTTPConnection(c.router.split("//")[1], timeout=60)
             for _ in range(3)]
    for conn in conns:
        st, v = request(c, "t", conn=conn)
        check(st == 200, "a request: %s %s" % (st, v))
    slices = []
    tasks = "/proc/%d/task" % c.server.pid
    for tid in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, tid, "sched")) as f:
                for line in f:
                    if line.startswith("se.slice"):
                        slices.append(int(line.split(":")[1]))
        except OSError:
            pass  # a thread that ended meanwhile
    for conn in conns:
        conn.close()
    if not slices:
        print("skipped: this kernel does not show threads' slices")
        sys.exit(77)
    check(slices.count(100000) >= 5, "5 router threads with a 100 us "
          "slice (3 connections', accepting, probing): %s" % sorted(slices))


SCENARIOS = {
    "serve_slice": scenario_serve_slice,
    "serve_slowhead": scenario_serve_slowhead,
    "serve_chunked": scenario_serve_chunked,
    "serve_retry": scenario_serve_retry,
    "serve_smuggle": scenario_serve_smuggle,
    "serve_routers": scenario_serve_routers,
    "serve_scale": scenario_serve_scale,
    "serve_update": scenario_serve_update,
    "serve_kill": scenario_serve_kill,
    "serve_stream": scenario_serve_stream,
    "serve_reclaim": scenario_serve_reclaim,
    "serve_store": scenario_serve_store,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
