#!/usr/bin/env python3
"""The soak test: a bounded run of mixed load on a whole cluster on
loopback (two controllers on one PostgreSQL database, three agents with
emulated GPUs) while its parts are restarted at random moments:

- the active controller killed (kill -9) and started again, as a standby;
- the standby killed;
- an agent killed (kill -9) or stopped (SIGTERM) and started again on the
  same state (its tasks live on and are adopted);
- PostgreSQL restarted (fast or immediate shutdown).

The load: jobs of one, two and half a GPU in two queues (one of them with
a guarantee, so the other's jobs over their share are reclaimed), arrays
through the CLI, cancellations.  Every run of a job writes a file of its
own (JOB.RESTART.NODE) with its start and, when it ends, its end.

At the end, with the load stopped and every job ended, it checks:
- no job lost: every submission that got an id is stored;
- none ran twice: no restart of a job ran more than once, and no two runs
  of one job overlapped in time; a job that completed ran its last run to
  its end; a job not cancelled completed;
- no leak: each daemon's open descriptors and resident memory, sampled all
  along, grew no more than a bound between the first and the last third of
  its life (for every process that lived long enough to say), and the
  controllers hold a bounded number of PostgreSQL connections.

ALLOT_SOAK_S sets the length of the load (default 60 s; the suite's run);
an hour's run: ALLOT_SOAK_S=3600.  ALLOT_SOAK_SEED makes the restarts'
order repeatable.

Usage: e2e_soak.py pg_soak PATH/TO/allot
"""
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
import e2e_harden  # noqa: E402
from e2e import check, wait_for  # noqa: E402

FD_GROWTH = 16            # descriptors
RSS_GROWTH_KIB = 32768    # and at most half again what it was
PG_CONNECTIONS = 24


def call_any(urls, token, method, path, body=None):
    """The answer (status, body) of the first controller of urls that
    answers other than 503 or a refused connection; (None, None) when none
    does.  A connection cut after the request went gives (0, None): it
    may or may not have been done."""
    for u in urls:
        req = urllib.request.Request(
            u + path, method=method,
            data=json.dumps(body).encode() if body is not None else None)
        req.add_header("Authorization", "Bearer " + token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 503:
                continue
            try:
                return e.code, json.loads(e.read())
            except ValueError:
                return e.code, None
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                continue
            return 0, None
        except OSError:
            return 0, None
    return None, None


def proc_sample(pid):
    """(open descriptors, VmRSS in KiB) of pid, or None once it is gone."""
    try:
        fds = len(os.listdir("/proc/%d/fd" % pid))
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return fds, int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def runs_of(marks):
    """{job: [(restart, node, starts, start, end or None)]} from the runs'
    files."""
    out = {}
    for f in os.listdir(marks):
        job, restart, node = f.split(".", 2)
        words = open(os.path.join(marks, f)).read().split()
        starts = words.count("S")
        start = float(words[1]) if len(words) >= 2 else None
        # An end: "E TIME"; an "E" without its time is the job's own end
        # line whose date(1) the stop's SIGTERM killed, its trap's follows.
        end = None
        for k, w in enumerate(words[:-1]):
            if w == "E" and words[k + 1] != "E":
                end = float(words[k + 1])
                break
        out.setdefault(int(job), []).append(
            (int(restart), node, starts, start, end))
    return out


def scenario_pg_soak(c):
    length = float(os.environ.get("ALLOT_SOAK_S", "60"))
    seed = int(os.environ.get("ALLOT_SOAK_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    # Between restarts: a few seconds in a short run, about a minute in an
    # hour's, so that the processes that live on live long enough for
    # their growth to show.
    gap = max(3.0, length / 60)
    # Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
    # default) before it is used again, resident memory that no leak made:
    # keep it small, so that the growth measured is what the code holds.
    asan = os.environ.get("ASAN_OPTIONS", "")
    c.env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
        "quarantine_size_mb=8"
    c.store = ["--store", c.pg.uri]
    ports = [e2e.free_port() for _ in range(2)]
    urls = ["http://127.0.0.1:%d" % p for p in ports]
    dirs = [os.path.join(c.root, "ctl%d" % i) for i in range(2)]
    procs = [None, None]
    agents = {}
    lives = {}  # (name, pid) -> [(t, fds, rss)]
    lives_lock = threading.Lock()

    def start_ctl(i):
        procs[i] = c.spawn("ctl%d" % i, [
            "server", "--listen", "127.0.0.1:%d" % ports[i], "--state",
            dirs[i], "--standby", "--grace", "2000"] + c.store)
        with lives_lock:
            lives[("ctl%d" % i, procs[i].pid)] = []

    def active():
        return e2e_harden.active_of(urls)

    def start_agent(name):
        agents[name] = c.spawn("agent-" + name, [
            "agent", "--server", ",".join(urls), "--join-token", c.join,
            "--name", name, "--addr", "127.0.0.1", "--state",
            os.path.join(c.root, "agent-" + name), "--fake-gpus",
            "4xH100-80GB", "--no-run-as-user"])
        with lives_lock:
            lives[("agent-" + name, agents[name].pid)] = []

    for i in range(2):
        start_ctl(i)
    e2e_harden.join_active(c, urls, dirs, 15)
    names = ["n1", "n2", "n3"]
    for name in names:
        start_agent(name)

    def nodes_ready():
        s, b = call_any(urls, c.admin, "GET", "/v1/nodes")
        return s == 200 and len([n for n in b["nodes"]
                                 if n["state"] == "ready"]) == 3

    wait_for(nodes_ready, 20, "three agents to register")
    s, b = call_any(urls, c.admin, "POST", "/v1/queues", {
        "name": "team", "quota": {"gpu": {"deserved": 6}}})
    check(s == 201, "queue team: %s %s" % (s, b))

    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)

    def script(secs):
        return ("f=%s/$ALLOT_JOB_ID.$ALLOT_RESTART_COUNT.$ALLOT_NODE; "
                "echo S $(date +%%s.%%N) >> $f; "
                "trap 'echo E $(date +%%s.%%N) >> $f; exit 143' TERM; "
                "sleep %.1f & wait; echo E $(date +%%s.%%N) >> $f"
                % (marks, secs))

    accepted, cancelled, lock = [], set(), threading.Lock()
    unsure = [0]  # submissions whose answer was lost
    stop = threading.Event()

    def api_submitter(k):
        r = random.Random(seed + k)
        while not stop.is_set():
            body = {"command": ["sh", "-c", script(r.uniform(0.2, 3))],
                    "queue": r.choice(["default", "team"])}
            kind = r.random()
            if kind < 0.6:
                body["gpus"] = 1
            elif kind < 0.8:
                body["gpus"] = 2
            else:
                body["gpu_fraction"] = 0.5
            s, b = call_any(urls, c.admin, "POST", "/v1/jobs", body)
            if s == 201:
                with lock:
                    accepted.append(b["id"])
            elif s == 0:
                unsure[0] += 1
            elif s is None:
                time.sleep(0.1)
            else:
                raise e2e.Fail("POST /v1/jobs: %s %s" % (s, b))
            # A backlog of about a minute's work, not an ever-growing one.
            if len(accepted) % 20 == 0:
                s, b = call_any(urls, c.admin, "GET",
                                "/v1/jobs?state=pending&limit=1000")
                while (s == 200 and len(b["jobs"]) > 60 and
                       not stop.is_set()):
                    time.sleep(0.5)
                    s, b = call_any(urls, c.admin, "GET",
                                    "/v1/jobs?state=pending&limit=1000")
            time.sleep(r.uniform(0, 0.2))

    def cli_worker():
        r = random.Random(seed + 100)
        while not stop.is_set():
            if r.random() < 0.5:
                p = c.cli("submit", "--array", "0-3", "--gpus", "1",
                          "--queue", r.choice(["default", "team"]), "--",
                          "sh", "-c", script(r.uniform(0.2, 1.5)), ok=False)
                if p.returncode == 0:
                    with lock:
                        accepted.append(int(p.stdout.strip()))
            else:
                with lock:
                    pick = r.choice(accepted) if accepted else None
                if pick is not None:
                    p = c.cli("cancel", str(pick), ok=False)
                    if p.returncode == 0:
                        with lock:
                            cancelled.add(pick)
            time.sleep(r.uniform(0.5, 2))

    def sampler():
        """Every second, each daemon's descriptors and memory; a
        controller's only while it is the active one (a standby holds
        less, and taking over is no growth)."""
        while not stop.wait(1.0):
            cur = active()
            with lives_lock:
                keys = list(lives)
            for key in keys:
                if key[0].startswith("ctl") and (
                        cur is None or procs[cur].pid != key[1]):
                    continue
                got = proc_sample(key[1])
                if got is not None:
                    with lives_lock:
                        lives[key].append((time.monotonic(),) + got)

    events = []

    def chaos():
        while not stop.wait(rnd.uniform(gap * 0.5, gap * 1.5)):
            what = rnd.choice(["active", "standby", "agent9", "agentterm",
                               "pg"])
            events.append(what)
            if what in ("active", "standby"):
                cur = active()
                if cur is None:
                    continue
                i = cur if what == "active" else 1 - cur
                procs[i].kill()
                procs[i].wait(10)
                if what == "active":
                    wait_for(lambda: active() not in (None, i), 20,
                             "the standby to take over")
                start_ctl(i)
            elif what.startswith("agent"):
                name = rnd.choice(names)
                p = agents[name]
                p.send_signal(signal.SIGKILL if what == "agent9"
                              else signal.SIGTERM)
                p.wait(30)
                start_agent(name)
            else:
                c.pg.stop(rnd.choice(["fast", "immediate"]))
                time.sleep(rnd.uniform(0.2, 2))
                c.pg.start()

    threads = [threading.Thread(target=api_submitter, args=(k,))
               for k in range(2)]
    threads += [threading.Thread(target=f) for f in
                (cli_worker, sampler)]
    errors = []

    def chaos_main():
        try:
            chaos()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            stop.set()

    threads.append(threading.Thread(target=chaos_main))
    for t in threads:
        t.start()
    t_end = time.monotonic() + length
    try:
        while time.monotonic() < t_end and not stop.is_set():
            time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(120)
    if errors:
        raise errors[0]
    check(len(accepted) > 0, "no job was accepted")

    # Everything ends.
    def all_ended():
        s, b = call_any(urls, c.admin, "GET",
                        "/v1/jobs?state=active&limit=1")
        return s == 200 and not b["jobs"]

    wait_for(all_ended, 180, "every job to end")
    def listing(expand):
        out, after = {}, 0
        while after is not None:
            s, b = call_any(urls, c.admin, "GET",
                            "/v1/jobs?limit=1000&expand=%d&after=%d" %
                            (expand, after))
            check(s == 200, "GET /v1/jobs: %s %s" % (s, b))
            for j in b["jobs"]:
                out[j["id"]] = j
            after = b["next"]
        return out

    stored = listing(0)
    lost = [i for i in accepted if i not in stored]
    check(not lost, "accepted jobs lost: %s" % lost[:10])
    jobs = listing(1)  # an array's elements instead of the array

    runs = runs_of(marks)
    bad, elements = [], 0
    for jid, j in sorted(jobs.items()):
        elements += 1
        parent = j.get("array_job_id")
        was_cancelled = jid in cancelled or parent in cancelled
        rs = sorted(runs.get(jid, []))
        restarts = [r[0] for r in rs]
        if len(set(restarts)) != len(restarts) or any(r[2] > 1 for r in rs):
            bad.append("job %d ran a restart twice: %s" % (jid, rs))
        spans = sorted((r[3], r[4] if r[4] is not None else float("inf"))
                       for r in rs if r[3] is not None)
        for a, b2 in zip(spans, spans[1:]):
            if b2[0] < a[1]:
                bad.append("job %d's runs overlapped: %s" % (jid, rs))
                break
        if j["state"] == "completed":
            last = [r for r in rs if r[0] == j.get("restart_count", 0)]
            if not last or last[0][4] is None:
                bad.append("job %d completed without its run %d ending: "
                           "%s" % (jid, j.get("restart_count", 0), rs))
        elif not was_cancelled:
            bad.append("job %d %s: %s" % (jid, j["state"], j.get("reason")))
    check(not bad, "%d bad jobs: %s" % (len(bad), "; ".join(bad[:8])))

    # No growth beyond the bounds.
    growth, lived = [], 0
    with lives_lock:
        for (name, pid), ss in lives.items():
            if len(ss) < 12:
                continue
            lived += 1
            third = len(ss) // 3
            fd0 = max(s[1] for s in ss[:third])
            fd1 = max(s[1] for s in ss[-third:])
            rss0 = max(s[2] for s in ss[:third])
            rss1 = max(s[2] for s in ss[-third:])
            # Under AddressSanitizer resident memory is its allocator's
            # (shadow, quarantine, never handed back): descriptors only.
            if fd1 > fd0 + FD_GROWTH or (not asan and
                                         rss1 > rss0 + max(RSS_GROWTH_KIB,
                                                           rss0 // 2)):
                growth.append("%s (pid %d, %d s): fds %d -> %d, rss %d -> "
                              "%d KiB" % (name, pid, ss[-1][0] - ss[0][0],
                                          fd0, fd1, rss0, rss1))
    check(not growth, "growth beyond the bound: %s" % growth)
    conns = int(c.pg.sql("SELECT count(*) FROM pg_stat_activity WHERE "
                         "datname = 'allot'"))
    check(conns <= PG_CONNECTIONS, "%d PostgreSQL connections" % conns)
    longest = max((ss[-1][0] - ss[0][0], name, ss) for (name, _), ss in
                  lives.items() if ss)
    ls = longest[2]
    print("  %.0f s, seed %d: %d jobs (%d runs, %d cancelled), %d "
          "submissions with a lost answer; restarts: %s; %d processes "
          "sampled; longest-lived %s %.0f s: fds %d -> %d, rss %d -> %d "
          "KiB; %d PostgreSQL connections at the end" %
          (length, seed, elements, sum(len(v) for v in runs.values()),
           len(cancelled), unsure[0],
           {e: events.count(e) for e in sorted(set(events))}, lived,
           longest[1], longest[0], ls[0][1], ls[-1][1], ls[0][2], ls[-1][2],
           conns))


SCENARIOS = {
    "pg_soak": scenario_pg_soak,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
