#!/usr/bin/env python3
"""End-to-end tests of allot's server, agents and CLI on loopback.

Usage: e2e.py SCENARIO PATH/TO/allot

Each scenario starts real processes (one `allot server`, agents with
emulated GPUs) on a private port with private state directories under a
temporary directory, drives them through the CLI and the HTTP API, and
checks what happened.  Processes are always stopped; the directory (with
every process's log) is removed on success and kept, with its path printed,
on failure.
"""
import glob
import json
import os
import re
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def task_record(root, agent, job):
    """True while an agent's state directory holds a record of a task of
    job: a tasks/SLOT.state file whose first field is the job id (slots are
    reused; an empty file is a free slot)."""
    tdir = os.path.join(root, agent, "tasks")
    for f in os.listdir(tdir) if os.path.isdir(tdir) else []:
        if f.endswith(".state"):
            try:
                words = open(os.path.join(tdir, f)).read().split()
            except OSError:
                continue
            if words and words[0] == str(job):
                return True
    return False


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise Fail("timed out waiting for " + what)


class Postgres:
    """A private PostgreSQL server for the scenarios that keep the
    controller's state there: initdb in a directory of its own, listening on
    a Unix socket in it and nowhere else (as the Debian package's postgres
    user when we are root: PostgreSQL refuses to run as root)."""

    def __init__(self):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise Fail("PostgreSQL is not installed (scripts/deps installs "
                       "it)")
        self.bin = os.path.dirname(found[-1])
        self.dir = tempfile.mkdtemp(prefix="allot-pg-")
        self.as_user = {}
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = {"user": pw.pw_uid, "group": pw.pw_gid}
        self.data = os.path.join(self.dir, "data")
        self.pg("initdb", "-D", self.data, "-U", "allot", "-A", "trust",
                "--no-sync")
        self.start()
        self.pg("createdb", "-h", self.dir, "-U", "allot", "allot")
        self.uri = "postgresql:///allot?host=%s&user=allot" % self.dir

    def pg(self, prog, *args):
        p = subprocess.run([os.path.join(self.bin, prog)] + list(args),
                           capture_output=True, text=True, timeout=120,
                           cwd=self.dir, **self.as_user)
        if p.returncode != 0:
            raise Fail("%s: exit %d: %s%s" % (prog, p.returncode, p.stdout,
                                              p.stderr))
        return p.stdout

    def start(self):
        self.pg("pg_ctl", "-D", self.data, "-l",
                os.path.join(self.dir, "postgres.log"), "-w", "-o",
                "-k %s -c listen_addresses='' -c fsync=on" % self.dir,
                "start")

    def stop(self, mode="fast"):
        self.pg("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def sql(self, query):
        return self.pg("psql", "-h", self.dir, "-U", "allot", "-d", "allot",
                       "-At", "-c", query).strip()

    def close(self):
        try:
            self.stop("immediate")
        except Fail:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    def __init__(self, allot, root):
        self.allot = allot
        self.root = root
        self.port = 0  # the server picks a free one; see start_server()
        self.url = None
        self.state = os.path.join(root, "server")
        self.server = None
        self.store = []  # ["--store", URI] when a scenario runs on PostgreSQL
        self.pg = None
        self.agents = {}
        self.procs = []
        self.env = dict(os.environ)
        self.env["HOME"] = root  # keep the user's config out of it
        self.env.pop("XDG_CONFIG_HOME", None)
        self.env.pop("XDG_DATA_HOME", None)

    # -- processes -------------------------------------------------------
    def spawn(self, name, args, env=None, preexec=None):
        log = open(os.path.join(self.root, name + ".log"), "ab")
        p = subprocess.Popen([self.allot] + args, stdout=log,
                             stderr=subprocess.STDOUT,
                             env=dict(self.env, **(env or {})),
                             start_new_session=True, preexec_fn=preexec)
        log.close()
        self.procs.append(p)
        return p

    def start_server(self, *extra, preexec=None):
        """Starts the server; the first time on a port it picks itself
        (read back from STATE/url, so parallel tests never race for one),
        after a restart on the same port, where the agents look for it.
        preexec runs in the server's process before it starts."""
        urlfile = os.path.join(self.state, "url")
        if os.path.exists(urlfile):
            os.unlink(urlfile)
        self.server = self.spawn("server", [
            "server", "--listen", "127.0.0.1:%d" % self.port, "--state",
            self.state, "--grace", "2000", "--log-level", "debug"
        ] + self.store + list(extra), preexec=preexec)
        wait_for(lambda: os.path.exists(urlfile), 10, "STATE/url")
        self.url = open(urlfile).read().strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        self.env["ALLOT_SERVER"] = self.url
        wait_for(lambda: self.healthz() is not None, 10, "the server")
        self.admin = open(os.path.join(self.state, "admin-token")).read().strip()
        self.join = open(os.path.join(self.state, "join-token")).read().strip()
        self.env["ALLOT_TOKEN"] = self.admin

    def kill_server(self, sig=signal.SIGKILL):
        self.server.send_signal(sig)
        self.server.wait(10)

    def start_agent(self, name, gpus="8xH100-80GB", env=None,
                    as_user=False, extra=(), preexec=None):
        """as_user: run tasks as their submitters (the default of a root
        agent); the other scenarios submit as users that are not Unix
        accounts here."""
        fake = ["--fake-gpus", gpus] if gpus else []
        who = [] if as_user else ["--no-run-as-user"]
        self.agents[name] = self.spawn("agent-" + name, [
            "agent", "--server", self.url, "--join-token", self.join,
            "--name", name, "--addr", "127.0.0.1", "--state",
            os.path.join(self.root, "agent-" + name)
        ] + fake + who + list(extra), env, preexec)
        wait_for(lambda: any(n["name"] == name and n["state"] == "ready"
                             for n in self.api("GET", "/v1/nodes")[1]["nodes"]),
                 10, "agent " + name + " to register")

    def stop(self):
        """Stops every process; returns the daemons that did not exit 0 on
        SIGTERM (under ASan that includes leaks found at exit)."""
        bad = []
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            if p.returncode is not None and p.returncode < 0:
                continue  # killed on purpose by the scenario
            try:
                if p.wait(10) != 0:
                    bad.append("%s exited %d" % (" ".join(p.args[1:3]),
                                                 p.returncode))
            except subprocess.TimeoutExpired:
                bad.append("%s ignored SIGTERM" % " ".join(p.args[1:3]))
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(10)
        # Tasks run in their own sessions: kill any left behind by any
        # agent under the root (allot dev's included).
        for tdir, _, files in os.walk(self.root):
            if os.path.basename(tdir) != "tasks":
                continue
            for f in files:
                if f.endswith(".state"):
                    try:
                        # "JOB TASK RESTART PID START DEVICES"
                        pid, start = open(os.path.join(tdir, f)).read() \
                            .split()[3:5]
                        # Only the monitor we started: same pid and start
                        # time (field 22 of /proc/PID/stat), never pid 0
                        # (our own process group) or a recycled pid.
                        stat = open("/proc/%s/stat" % pid).read()
                        if int(pid) > 1 and \
                                stat.rsplit(")", 1)[1].split()[19] == start:
                            os.killpg(int(pid), signal.SIGKILL)
                    except (ValueError, IndexError, OSError):
                        pass
        return bad

    # -- API and CLI -----------------------------------------------------
    def healthz(self):
        try:
            return self.api("GET", "/v1/healthz", token=None)[1]
        except (OSError, Fail):
            return None

    def api(self, method, path, body=None, token="admin", raw=None,
            headers=None):
        tok = self.admin if token == "admin" else token
        data = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        if tok:
            req.add_header("Authorization", "Bearer " + tok)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            text = e.read()
            status = e.code
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text.decode(errors="replace")

    def cli(self, *args, token=None, ok=True):
        env = dict(self.env)
        if token is not None:
            env["ALLOT_TOKEN"] = token
        p = subprocess.run([self.allot] + list(args), capture_output=True,
                           text=True, env=env, timeout=60, cwd=self.root)
        if ok and p.returncode != 0:
            raise Fail("allot %s: exit %d: %s" % (" ".join(args),
                                                  p.returncode, p.stderr))
        return p

    def job(self, jid):
        s, j = self.api("GET", "/v1/jobs/%d" % jid)
        check(s == 200, "GET job %d: %s %s" % (jid, s, j))
        return j

    def wait_state(self, jid, states, timeout=20):
        states = (states,) if isinstance(states, str) else states
        return wait_for(lambda: (lambda j: j if j["state"] in states
                                 else None)(self.job(jid)),
                        timeout, "job %d to be %s" % (jid, "/".join(states)))

    def refused(self, *args):
        """Runs `allot ARGS` (a daemon that should refuse to start) and
        returns its exit status and stderr; one still running after 15 s
        was not refused."""
        try:
            p = subprocess.run([self.allot] + list(args), capture_output=True,
                               text=True, env=self.env, timeout=15)
        except subprocess.TimeoutExpired:
            raise Fail("allot %s should have been refused, and kept "
                       "running" % " ".join(args[:1]))
        return p.returncode, p.stderr

    def submit(self, *args, **kw):
        p = self.cli("submit", *args, **kw)
        return int(p.stdout.strip())


# -- scenarios -------------------------------------------------------------

def scenario_run(c):
    """Jobs submitted through the CLI run on agents with emulated GPUs."""
    c.start_server()
    for n in ("n1", "n2", "n3"):
        c.start_agent(n, "4xA100-40GB")
    nodes = json.loads(c.cli("nodes", "--json").stdout)
    check(len(nodes) == 3 and all(len(n["gpus"]) == 4 and n["emulated"]
                                  for n in nodes), "three nodes of 4 GPUs")
    check("(emulated)" in c.cli("nodes").stdout, "nodes says emulated")

    a = c.submit("--gpus", "2", "--name", "two", "--", "sh", "-c",
                 "echo CVD=$CUDA_VISIBLE_DEVICES JOB=$ALLOT_JOB_ID "
                 "TASK=$ALLOT_TASK_INDEX RESTART=$ALLOT_RESTART_COUNT "
                 "CWD=$(pwd) FOO=$FOO", "--env", "FOO=bar")
    j = c.wait_state(a, "completed")
    out = c.cli("logs", str(a)).stdout
    lj = json.loads(c.cli("logs", "--json", str(a)).stdout)
    check(lj["job"] == a and lj["task"] == 0 and lj["offset"] == 0 and
          lj["text"] == out, "logs --json: %s" % lj)
    for args, what in ((("cancel", "abc"), "'abc' is not a job id"),
                       (("show",), "which job?"),
                       (("logs", "--task", "x", str(a)), "want numbers"),
                       (("ls", "--limit", "5x"), "--limit wants"),
                       (("token", "create", "--user", "x", "--role", "god"),
                        "--role is user, admin, agent or metrics")):
        p = c.cli(*args, ok=False)
        check(p.returncode == 2 and what in p.stderr,
              "allot %s says what is wrong: %r" % (" ".join(args), p.stderr))
    gpus = ",".join(str(g) for g in j["placement"][0]["gpus"])
    check(len(j["placement"][0]["gpus"]) == 2, "two GPUs placed")
    check("CVD=%s " % gpus in out, "CUDA_VISIBLE_DEVICES=%s in %r" %
          (gpus, out))
    check("JOB=%d TASK=0 RESTART=0" % a in out, "allot variables: " + out)
    check("CWD=%s" % c.root in out, "cwd as submitted: " + out)
    check("FOO=bar" not in out, "--env after the command is the command's")

    b = c.submit("--gpus", "1", "--env", "FOO=bar", "--", "sh", "-c",
                 "echo FOO=$FOO")
    c.wait_state(b, "completed")
    check("FOO=bar" in c.cli("logs", str(b)).stdout, "--env reaches the job")

    # A gang of 3 tasks x 4 GPUs spans the three nodes.
    g = c.submit("--gpus", "4", "--tasks", "3", "--name", "gang", "--",
                 "sh", "-c", "echo R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK "
                 "M=$MASTER_ADDR:$MASTER_PORT")
    j = c.wait_state(g, "completed")
    check(len({p["node"] for p in j["placement"]}) == 3, "gang on 3 nodes")
    for t in range(3):
        out = c.cli("logs", "--task", str(t), str(g)).stdout
        check("R=%d W=3 L=0 M=127.0.0.1:%d" % (t, j["master_port"]) in out,
              "gang env: " + out)

    # logs -f follows a running job to its end.
    fj = c.submit("--", "sh", "-c", "echo first; sleep 1.5; echo second")
    c.wait_state(fj, "running")
    t0 = time.monotonic()
    out = c.cli("logs", "-f", str(fj)).stdout
    check(out == "first\nsecond\n" and time.monotonic() - t0 >= 1,
          "logs -f: %r" % out)

    # A failing job reports its exit code.
    f = c.submit("--", "sh", "-c", "exit 7")
    j = c.wait_state(f, "failed")
    check(j["exit_code"] == 7, "exit code 7, got %s" % j["exit_code"])

    # Cancel a running job: SIGTERM reaches it, it ends cancelled.
    k = c.submit("--gpus", "1", "--", "sh", "-c",
                 "trap 'echo TERM; exit 0' TERM; echo up; "
                 "while :; do sleep 0.05; done")
    c.wait_state(k, "running")
    wait_for(lambda: "up" in c.cli("logs", str(k)).stdout, 10, "job output")
    check("cancelled job %d" % k in c.cli("cancel", str(k)).stdout, "cancel")
    c.wait_state(k, "cancelled")
    wait_for(lambda: "TERM" in c.cli("logs", str(k)).stdout, 10,
             "SIGTERM to reach the job")
    p = c.cli("cancel", str(k), ok=False)
    check(p.returncode == 1 and "already cancelled" in p.stderr,
          "second cancel fails with 1")

    # A job that ignores SIGTERM is killed after the grace period.
    s = c.submit("--", "sh", "-c", "trap '' TERM; echo up; sleep 60")
    c.wait_state(s, "running")
    wait_for(lambda: "up" in c.cli("logs", str(s)).stdout, 10, "job output")
    t0 = time.monotonic()
    c.cli("cancel", str(s))
    wait_for(lambda: not any(n["gpus_used"] for n in
                             c.api("GET", "/v1/nodes")[1]["nodes"]) and
             not any(task_record(c.root, n, s)
                     for n in ("agent-n1", "agent-n2", "agent-n3")),
             15, "the stubborn task to be killed")
    check(time.monotonic() - t0 >= 1.5, "grace period respected")

    # Hold and release; --after.
    h = c.submit("--hold", "--", "true")
    check(c.job(h)["state"] == "held", "held at submit")
    d = c.submit("--after", str(h), "--", "true")
    time.sleep(0.2)
    check(c.job(d)["state"] == "pending", "dependent waits")
    c.cli("release", str(h))
    c.wait_state(h, "completed")
    c.wait_state(d, "completed")

    # Read commands: table and --json.
    out = c.cli("ls", "--all").stdout
    check(out.startswith("ID") and "gang" in out and "completed" in out,
          "ls --all table: " + out)
    lj = json.loads(c.cli("ls", "--all", "--json").stdout)
    check(len(lj) == 9 and lj[0]["id"] == a, "ls --json lists all 9 jobs")
    sj = json.loads(c.cli("show", "--json", str(g)).stdout)
    check([e["event"] for e in sj["history"]][:2] == ["submitted", "started"]
          and sj["history"][-1]["event"] == "completed", "history")
    check("history:" in c.cli("show", str(g)).stdout, "show text")
    qj = json.loads(c.cli("queues", "--json").stdout)
    check(qj[0]["name"] == "default", "queues --json")
    # Pagination and filters.
    s_, page = c.api("GET", "/v1/jobs?limit=2")
    check(s_ == 200 and len(page["jobs"]) == 2 and page["next"] == a + 1,
          "first page")
    s_, page = c.api("GET", "/v1/jobs?limit=2&after=%d" % page["next"])
    check([j["id"] for j in page["jobs"]] == [a + 2, a + 3], "second page")
    s_, page = c.api("GET", "/v1/jobs?state=failed")
    check([j["id"] for j in page["jobs"]] == [f], "state filter")
    # Newest first, and the page before.
    s_, page = c.api("GET", "/v1/jobs?limit=2&order=desc")
    ids = [j["id"] for j in page["jobs"]]
    check(s_ == 200 and len(ids) == 2 and ids[0] > ids[1] and
          ids[0] == max(j["id"] for j in lj) and page["next"] == ids[1],
          "newest first: %s %s" % (ids, page["next"]))
    s_, page2 = c.api("GET", "/v1/jobs?limit=2&order=desc&before=%d" %
                      page["next"])
    check([j["id"] for j in page2["jobs"]] == [ids[1] - 1, ids[1] - 2],
          "the page before: %s" % page2)
    s_, page = c.api("GET", "/v1/jobs?order=desc&before=%d&state=failed" %
                     (f + 1))
    check([j["id"] for j in page["jobs"]] == [f], "desc, filtered: %s" % page)
    for q in ("order=up", "before=x", "order=desc&expand=1"):
        s_, b_ = c.api("GET", "/v1/jobs?" + q)
        check(s_ == 400 and b_["message"], "%s: %s %s" % (q, s_, b_))

    # Admin commands: queues and node draining.
    out = c.cli("queue", "set", "research", "--deserved", "gpu=4,mem=64G",
                "--limit", "gpu=8", "--weight", "gpu=2").stdout
    check("set queue research" in out, "queue set: " + out)
    q = [x for x in json.loads(c.cli("queues", "--json").stdout)
         if x["name"] == "research"][0]
    check(q["quota"]["gpu"] == {"deserved": 4, "limit": 8, "weight": 2} and
          q["quota"]["mem"]["deserved"] == 64 << 30, "quota: %s" % q)
    # The table: deserved / fair share / used / limit of every resource.
    table = c.cli("queues").stdout.splitlines()
    check(table[0].split() == ["QUEUE", "PARENT", "GPU", "CPU", "MEM-GIB"]
          and table[1].split() == ["DES", "FAIR", "USED", "LIM"] * 3,
          "queues table heads: %r" % table[:2])
    row = [r for r in table if r.startswith("research ")][0].split()
    check(row[2:6] == ["4.0", "%.1f" % q["fair_share"]["gpu"], "0.0", "8.0"]
          and row[10] == "64.0", "the research row: %r" % row)
    c.cli("queue", "set", "research", "--deserved", "gpu=2")
    q = [x for x in json.loads(c.cli("queues", "--json").stdout)
         if x["name"] == "research"][0]
    check(q["quota"]["gpu"]["deserved"] == 2 and
          q["quota"]["gpu"]["limit"] == -1, "queue set replaces")
    check(c.cli("queue", "set", "x", "--deserved", "tpu=1",
                ok=False).returncode == 2, "bad resource exits 2")
    c.cli("queue", "delete", "research")
    check("research" not in c.cli("queues").stdout, "queue deleted")
    check("draining" in c.cli("node", "drain", "n1").stdout, "drain")
    dj = c.submit("--gpus", "4", "--tasks", "3", "--", "true")
    time.sleep(0.5)
    check(c.job(dj)["state"] == "pending", "no gang while n1 drains")
    check("ready" in c.cli("node", "resume", "n1").stdout, "resume")
    c.wait_state(dj, "completed")
    alice = c.api("POST", "/v1/tokens", {"user": "alice"})[1]["token"]
    p = c.cli("node", "drain", "n1", token=alice, ok=False)
    check(p.returncode == 1 and "403" in p.stderr, "users cannot drain")

    # Usage errors exit 2; unreachable server exits 1.
    check(c.cli("submit", "--gpus", "x", "--", "true", ok=False).returncode
          == 2, "bad flag exits 2")
    check(c.cli("ls", "--bogus", ok=False).returncode == 2, "unknown option")
    p = c.cli("ls", "--server", "http://127.0.0.1:1", ok=False)
    check(p.returncode == 1 and "cannot reach" in p.stderr, "unreachable")


def scenario_auth(c):
    """401, 403, 400, 404, 405, 409 and 413 answers, as JSON errors."""
    c.start_server("--max-body", "4096")
    s, b = c.api("GET", "/v1/healthz", token=None)
    check(s == 200 and b == {"ok": True},
          "healthz is open, and says no more than that: %s" % b)
    s, b = c.api("GET", "/v1/healthz")
    check(s == 200 and b["ok"] and "jobs" in b, "more with a token: %s" % b)
    for tok in (None, "al_0000000000000000_00000000000000000000000000000000",
                "garbage", c.admin[:-1] + ("0" if c.admin[-1] != "0" else "1")):
        s, b = c.api("GET", "/v1/jobs", token=tok)
        check(s == 401 and b["error"] == "unauthorized", "401 for %r" % tok)
    p = c.cli("ls", token="nope", ok=False)
    check(p.returncode == 1 and "401" in p.stderr, "CLI reports 401")

    s, b = c.api("POST", "/v1/tokens", {"user": "alice", "role": "user"})
    check(s == 201 and b["token"].startswith("al_"), "token create")
    alice = b["token"]
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    check(bob.startswith("al_"), "token create through the CLI")
    db = open(os.path.join(c.state, "allot.db"), "rb").read()
    check(alice.encode() not in db and alice[20:].encode() not in db,
          "tokens are not stored in clear")
    s, b = c.api("GET", "/v1/whoami", token=alice)
    check(s == 200 and b == {"user": "alice", "role": "user"}, "whoami")
    s, b = c.api("GET", "/v1/whoami", token=None,
                 headers={"Authorization": "bearer " + alice})
    check(s == 200 and b["user"] == "alice",
          "the scheme is case-insensitive: %s %s" % (s, b))

    # 403: users cannot administer, agents' token is not a user token.
    s, b = c.api("POST", "/v1/queues", {"name": "q"}, token=alice)
    check(s == 403 and b["error"] == "forbidden", "403 queue create")
    s, b = c.api("POST", "/v1/nodes/x/drain", token=alice)
    check(s == 403, "403 drain")
    s, b = c.api("GET", "/v1/jobs", token=c.join)
    check(s == 403, "join token is not a user token")
    s, b = c.api("POST", "/v1/agent/sync", {"node": "x"}, token=alice)
    check(s == 403, "user token is not a join token")

    # Users see and cancel only their own jobs.
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"]}, token=alice)
    check(s == 201 and b["user"] == "alice", "alice submits")
    aj = b["id"]
    s, b = c.api("POST", "/v1/jobs/%d/cancel" % aj, token=bob)
    check(s == 403, "bob cannot cancel alice's job")
    s, b = c.api("GET", "/v1/jobs/%d" % aj, token=bob)
    check(s == 403 and "alice" not in b["message"],
          "bob cannot read alice's job, nor learn whose it is: %s" % b)
    s, b = c.api("GET", "/v1/jobs", token=bob)
    check(s == 200 and b["jobs"] == [], "bob lists only his jobs")
    s, b = c.api("GET", "/v1/jobs?user=alice", token=bob)
    check(s == 403, "bob cannot list alice's jobs")
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"], "user": "eve"},
                 token=alice)
    check(s == 403, "only admins submit for others")
    s, b = c.api("POST", "/v1/jobs/%d/cancel" % aj, token=alice)
    check(s == 200 and b["state"] == "cancelled", "alice cancels hers")
    s, b = c.api("POST", "/v1/jobs/%d/cancel" % aj, token=alice)
    check(s == 409 and b["error"] == "conflict", "409 cancelling twice")

    # 400: malformed bodies and fields.
    bad = [
        b"{not json", b"[1,2]", b'{"command": []}', b'{"command": "ls"}',
        b'{"command": ["x"], "gpus": -1}', b'{"command": ["x"], "gpus": 65}',
        b'{"command": ["x"], "tasks": 0}', b'{"command": ["x"], "class": "z"}',
        b'{"command": ["x"], "queue": "nope"}',
        b'{"command": ["x"], "after": [999]}',
        b'{"command": ["x"], "env": {"A": 1}}',
        b'{"command": ["x"], "gpu_fraction": 1.5}',
        b'{"command": ["x"], "command": ["y"]}',
        b'{"command": ["x"], "gpuz": 2}',
    ]
    for raw in bad:
        s, b = c.api("POST", "/v1/jobs", raw=raw)
        check(s == 400 and b["error"] == "bad_request" and b["message"],
              "400 for %r: %s %s" % (raw, s, b))
    s, b = c.api("GET", "/v1/jobs?state=bogus")
    check(s == 400, "400 bad state filter")
    s, b = c.api("GET", "/v1/jobs?limit=0")
    check(s == 400, "400 bad limit")

    # 404 and 405.
    check(c.api("GET", "/v1/jobs/12345")[0] == 404, "404 job")
    check(c.api("GET", "/v1/jobs/abc")[0] == 404, "404 bad id")
    check(c.api("GET", "/v1/nothing")[0] == 404, "404 route")
    check(c.api("DELETE", "/v1/jobs")[0] == 405, "405")

    # 413: body over --max-body, with and without Content-Length.
    big = json.dumps({"command": ["echo", "x" * 8000]}).encode()
    s, b = c.api("POST", "/v1/jobs", raw=big)
    check(s == 413 and b["error"] == "too_large", "413: %s %s" % (s, b))
    with socket.create_connection(("127.0.0.1", c.port)) as sk:
        sk.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: "
                   b"Bearer " + c.admin.encode() +
                   b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 3000
        try:
            for _ in range(3):
                sk.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sk.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        resp = sk.recv(4096)
    check(b" 413 " in resp.split(b"\r\n")[0], "413 chunked: %r" % resp[:80])

    # Random bodies and paths: only 2xx or 4xx answers, and the server
    # stays up (under ASan this also checks memory safety).
    import random
    rnd = random.Random(4)
    values = [None, True, 0, -1, 7, 2 ** 62, 1.5, "", "x", "default", [],
              ["true"], [1], {}, {"A": "b"}, {"A": 1}, "../../etc"]
    keys = ["command", "name", "queue", "class", "tasks", "gpus",
            "gpu_fraction", "cpu_milli", "mem_bytes", "time_limit", "after",
            "cwd", "env", "hold", "user", "script", "gpu_model", "zzz"]
    for _ in range(300):
        body = {k: rnd.choice(values) for k in rnd.sample(keys, 5)}
        if rnd.random() < 0.5:
            body["command"] = ["true"]
        method, path = rnd.choice([
            ("POST", "/v1/jobs"), ("POST", "/v1/queues"),
            ("PUT", "/v1/queues/q%d" % rnd.randint(0, 2)),
            ("POST", "/v1/tokens"), ("POST", "/v1/jobs/%d/hold" % rnd.randint(0, 9)),
            ("GET", "/v1/jobs?limit=%s&after=%s&state=%s" % (
                rnd.choice(["1", "0", "x", "1000"]), rnd.choice(["", "3", "-1"]),
                rnd.choice(["active", "held", "x", ""]))),
            ("GET", "/v1/jobs/%d/logs?task=%s" % (rnd.randint(0, 9),
                                                   rnd.choice(["0", "9", "x"]))),
        ])
        st, b = c.api(method, path, body)
        check(200 <= st < 300 or 400 <= st < 500,
              "%s %s %s -> %s %s" % (method, path, body, st, b))
    check(c.healthz() is not None, "server up after random requests")

    # Queues: admin CRUD with 409 on duplicates and busy queues.
    s, b = c.api("POST", "/v1/queues", {"name": "research",
                                         "quota": {"gpu": {"deserved": 4}}})
    check(s == 201 and b["quota"]["gpu"]["deserved"] == 4, "queue create")
    check(c.api("POST", "/v1/queues", {"name": "research"})[0] == 409,
          "409 duplicate queue")
    s, b = c.api("PUT", "/v1/queues/research",
                 {"quota": {"gpu": {"deserved": 2, "limit": 6}}})
    check(s == 200 and b["quota"]["gpu"]["limit"] == 6, "queue update")
    check(c.api("PUT", "/v1/queues/nope", {})[0] == 404, "404 queue")
    # Misspelt or mistyped fields are refused, never ignored (a PUT with
    # "quoat" once reset the quota; a deserved of "4" became 0).
    for method, path, body in (
            ("PUT", "/v1/queues/research", {"quoat": {}}),
            ("PUT", "/v1/queues/research",
             {"quota": {"tpu": {"deserved": 1}}}),
            ("PUT", "/v1/queues/research",
             {"quota": {"gpu": {"deserved": 1, "limt": 3}}}),
            ("POST", "/v1/queues", {"name": "zz",
                                    "quota": {"gpu": {"deserved": "4"}}}),
            ("POST", "/v1/queues", {"name": "zz", "priority": "high"}),
            ("POST", "/v1/queues", {"name": "zz", "quota": {"gpu": 4}})):
        s, b = c.api(method, path, body)
        check(s == 400 and b["error"] == "bad_request",
              "400 for %s %s: %s %s" % (method, body, s, b))
    qs = {q["name"]: q for q in c.api("GET", "/v1/queues")[1]["queues"]}
    check("zz" not in qs and qs["research"]["quota"]["gpu"]["deserved"] == 2
          and qs["research"]["quota"]["gpu"]["limit"] == 6,
          "refused changes left the queues as they were")
    s, b = c.api("PUT", "/v1/queues/research", qs["research"])
    check(s == 200 and b["quota"]["gpu"]["limit"] == 6,
          "a queue as GET shows it can be PUT back: %s %s" % (s, b))
    # No cycles: a queue under another cannot become its parent.
    check(c.api("POST", "/v1/queues", {"name": "p1"})[0] == 201, "p1")
    check(c.api("POST", "/v1/queues", {"name": "c1", "parent": "p1"})[0] ==
          201, "c1 under p1")
    s, b = c.api("PUT", "/v1/queues/p1", {"parent": "c1"})
    check(s == 400 and "cycle" in b["message"], "no cycle: %s %s" % (s, b))
    check(c.api("DELETE", "/v1/queues/c1")[0] == 200 and
          c.api("DELETE", "/v1/queues/p1")[0] == 200, "both deletable")
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"],
                                       "queue": "research", "gpus": 1})
    check(s == 201, "submit to research")
    check(c.api("DELETE", "/v1/queues/research")[0] == 409,
          "409 deleting a busy queue")
    c.api("POST", "/v1/jobs/%d/cancel" % b["id"])
    check(c.api("DELETE", "/v1/queues/research")[0] == 200, "queue delete")


def scenario_crash(c):
    """kill -9 of the server under load: every 201 survives, runs once."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    c.start_agent("n2", "8xH100-80GB")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    accepted = []
    import threading
    stop = threading.Event()

    def submitter():
        while not stop.is_set():
            try:
                s, b = c.api("POST", "/v1/jobs", {
                    "command": ["sh", "-c", "echo x >> %s/$ALLOT_JOB_ID; "
                                "sleep 0.2" % marks],
                    "gpus": 1})
            except OSError:
                return
            if s != 201:
                return
            accepted.append(b["id"])

    threads = [threading.Thread(target=submitter) for _ in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(accepted) >= 40, 20, "40 accepted submissions")
    c.kill_server(signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join(30)
    n = len(accepted)
    c.start_server()
    s, b = c.api("GET", "/v1/jobs?limit=1000")
    ids = {j["id"] for j in b["jobs"]}
    missing = [i for i in accepted if i not in ids]
    check(not missing, "accepted jobs lost in the crash: %s" % missing[:10])
    for i in accepted:
        c.wait_state(i, "completed", timeout=60)
    for i in accepted:
        lines = open(os.path.join(marks, str(i))).read().count("x")
        check(lines == 1, "job %d ran %d times" % (i, lines))
    print("  %d jobs accepted before kill -9; all present, each ran once" % n)


def scenario_agent_restart(c):
    """An agent killed and restarted adopts its tasks: none lost or doubled;
    its spawner killed, the exit status of a running task is kept."""
    c.start_server()
    c.start_agent("n1", "2xH100-80GB")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    j = c.submit("--gpus", "1", "--", "sh", "-c",
                 "echo start >> %s/run; sleep 2; echo done" % marks)
    c.wait_state(j, "running")
    wait_for(lambda: os.path.exists(os.path.join(marks, "run")), 10,
             "the task to start")
    c.agents["n1"].send_signal(signal.SIGKILL)
    c.agents["n1"].wait(10)
    time.sleep(0.3)
    c.start_agent("n1", "2xH100-80GB")
    j = c.wait_state(j, "completed", timeout=30)
    check(open(os.path.join(marks, "run")).read().count("start") == 1,
          "the task ran exactly once")
    check("done" in c.cli("logs", str(j["id"])).stdout, "whole log shipped")

    # Slots are reused and marked free by a '-' over the first byte of the
    # record: with job ids of two digits and more, a restarted agent must
    # not read "-2 0 0 ..." as a task (strtoull takes it for 2^64 - 2).
    ids = [c.submit("--", "true") for _ in range(12)]
    for i in ids:
        c.wait_state(i, "completed")
    tdir = os.path.join(c.root, "agent-n1", "tasks")

    def all_free():
        recs = [open(os.path.join(tdir, f)).read(1)
                for f in os.listdir(tdir) if f.endswith(".state")]
        return recs and all(r == "-" for r in recs)
    wait_for(all_free, 10, "every slot to be freed")
    c.agents["n1"].send_signal(signal.SIGTERM)
    c.agents["n1"].wait(10)
    c.start_agent("n1", "2xH100-80GB")
    time.sleep(0.5)
    log = open(os.path.join(c.root, "agent-n1.log"), errors="replace").read()
    check("adopted task 1844674407" not in log, "no freed slot adopted")
    j = c.submit("--", "true")
    c.wait_state(j, "completed")

    # The spawner (the tasks' parent) killed while a task runs: the agent,
    # a child subreaper, gets the orphaned task and its real exit status,
    # starts another spawner, and new tasks run.
    j = c.submit("--", "sh", "-c", "echo up; sleep 1.5; exit 3")
    wait_for(lambda: "up" in c.cli("logs", str(j)).stdout, 10, "task output")
    agent = c.agents["n1"].pid
    kids = open("/proc/%d/task/%d/children" % (agent, agent)).read().split()
    check(len(kids) == 1, "the agent has one child, its spawner: %s" % kids)
    os.kill(int(kids[0]), signal.SIGKILL)
    jj = c.wait_state(j, ("failed", "completed"), timeout=20)
    check(jj["exit_code"] == 3 and jj["signal"] == 0,
          "the exit status survives the spawner: %s" % jj)
    j = c.submit("--", "true")
    c.wait_state(j, "completed")


def scenario_node_down(c):
    """A node silent past the timeout is marked down; its job is requeued
    with the same id and runs elsewhere."""
    c.start_server("--node-timeout", "2500")
    c.start_agent("n1", "1xH100-80GB")
    j = c.submit("--gpus", "1", "--", "sh", "-c",
                 "echo run $ALLOT_RESTART_COUNT; sleep 30")
    c.wait_state(j, "running")
    # "running" is the controller's decision: wait until n1 has started the
    # task (its record), or a kill before that leaves no first run at all.
    wait_for(lambda: task_record(c.root, "agent-n1", j), 10,
             "n1 to start the task")
    # Stop the agent (its task keeps running in its own session).
    c.agents["n1"].send_signal(signal.SIGKILL)
    c.agents["n1"].wait(10)
    c.start_agent("n2", "1xH100-80GB")
    wait_for(lambda: any(n["name"] == "n1" and n["state"] == "down"
                         for n in c.api("GET", "/v1/nodes")[1]["nodes"]),
             10, "n1 to be marked down")
    jj = c.wait_state(j, "running", timeout=10)
    wait_for(lambda: c.job(j)["placement"][0]["node"] == "n2", 10,
             "the job to run on n2")
    check(c.job(j)["restart_count"] == 1, "restart count 1")
    wait_for(lambda: "run 1" in c.cli("logs", str(j)).stdout, 10,
             "ALLOT_RESTART_COUNT=1 in the new run")
    # n1 comes back: it must kill its stale task, not keep it.
    c.start_agent("n1", "1xH100-80GB")
    wait_for(lambda: not task_record(c.root, "agent-n1", j), 15,
             "the stale task on n1 to be stopped")
    check(c.job(j)["state"] == "running", "the job still runs on n2")
    # Each run's output stays readable: --restart picks the run.
    wait_for(lambda: "run 0" in c.cli("logs", "--restart", "0", str(j)).stdout,
             10, "the first run's output (logs --restart 0)")
    check("run 0" not in c.cli("logs", str(j)).stdout and
          "run 1" in c.cli("logs", "--restart", "1", str(j)).stdout,
          "the latest run by default, and --restart 1")
    c.cli("cancel", str(j))
    # A task of a job the controller does not know (its store restored from
    # an older copy, say) is acknowledged, output and all, so that the
    # agent forgets it instead of reporting it on every sync.
    st, out = c.api("POST", "/v1/agent/sync", {
        "node": "n2", "wait_ms": 0, "tasks": [
            {"job": 99999, "task": 0, "restart": 0, "state": "exited",
             "exit_code": 0, "signal": 0, "log_off": 0}]}, token=c.join)
    acks = [a for a in out.get("acks", []) if a["job"] == 99999]
    check(st == 200 and len(acks) == 1 and acks[0]["log_off"] >= 1 << 40 and
          not any(t["job"] == 99999 for t in out["tasks"]),
          "an unknown job's task is acknowledged, not wanted: %s" % out)


def scenario_reclaim(c):
    """The guaranteed-quota story: Susan runs on all 8 GPUs; Joe gets his
    deserved 2 back by reclaim; Susan's evicted job is requeued with the
    same id; Jemma's build session is never touched."""
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    for q in ("susan", "joe", "jemma"):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": 2, "weight": 1}}})
        check(s == 201, "queue %s" % q)
    jemma = c.submit("--queue", "jemma", "--class", "build", "--gpus", "2",
                     "--", "sleep", "60")
    c.wait_state(jemma, "running")
    susan = [c.submit("--queue", "susan", "--gpus", "2", "--", "sh", "-c",
                      "echo run $ALLOT_RESTART_COUNT; sleep 60")
             for _ in range(3)]
    for j in susan:
        c.wait_state(j, "running")
    joe = c.submit("--queue", "joe", "--gpus", "2", "--", "sleep", "60")
    c.wait_state(joe, "running", timeout=15)
    states = [c.job(j) for j in susan]
    evicted = [j for j in states if j["restart_count"] == 1]
    check(len(evicted) == 1, "one of Susan's jobs evicted: %s" %
          [(j["id"], j["state"], j["restart_count"]) for j in states])
    check(evicted[0]["state"] == "pending", "evicted job requeued, pending")
    check(any(e["event"] == "preempted"
              for e in c.job(evicted[0]["id"])["history"]),
          "preemption in the history")
    check(c.job(jemma)["state"] == "running" and
          c.job(jemma)["restart_count"] == 0, "Jemma untouched")
    for j in [jemma, joe] + susan:
        c.cli("cancel", str(j), ok=False)


def scenario_dev(c):
    """`allot dev` starts a controller and an agent and configures the CLI."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)
    log = open(os.path.join(c.root, "dev.log"), "wb")
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    soft = 512 if hard == resource.RLIM_INFINITY or hard > 512 else hard

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    t0 = time.monotonic()
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True, preexec_fn=lower)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready at http://127.0.0.1:"),
          "dev prints the URL: %r" % line)
    c.port = int(line.split()[-1].rsplit(":", 1)[1])
    ready = time.monotonic() - t0
    cfg = open(os.path.join(c.root, ".config", "allot", "config")).read()
    check("server = http://127.0.0.1:%d" % c.port in cfg and "token = al_"
          in cfg, "config written")
    r = subprocess.run([c.allot, "submit", "--gpus", "1", "--", "sh", "-c",
                        "echo dev $CUDA_VISIBLE_DEVICES $(ulimit -n)"],
                       env=env, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "submit with the config: " + r.stderr)
    jid = r.stdout.strip()
    # Set but empty variables count as unset: the config file's values.
    r = subprocess.run([c.allot, "show", jid],
                       env=dict(env, ALLOT_SERVER="", ALLOT_TOKEN=""),
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "empty ALLOT_SERVER/ALLOT_TOKEN: " + r.stderr)
    cfgpath = os.path.join(c.root, ".config", "allot", "config")
    with open(cfgpath, "a") as f:
        f.write("srever = http://elsewhere:1\n")
    r = subprocess.run([c.allot, "show", jid], env=env, capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0 and "config:3: not a 'server = URL'" in r.stderr,
          "a misspelt setting is reported: %r" % r.stderr)

    def done():
        r = subprocess.run([c.allot, "show", "--json", jid], env=env,
                           capture_output=True, text=True, timeout=30)
        return r.returncode == 0 and json.loads(r.stdout)["state"] == \
            "completed"
    wait_for(done, 20, "the dev job to complete")
    r = subprocess.run([c.allot, "logs", jid], env=env, capture_output=True,
                       text=True, timeout=30)
    check(r.stdout.startswith("dev "), "dev job log: %r" % r.stdout)
    # The controller raises its own limit of open files; a task keeps the
    # one allot dev was started with.
    check(r.stdout.split()[-1] == str(soft),
          "the task's open-file limit is allot dev's (%d): %r" %
          (soft, r.stdout))
    p.send_signal(signal.SIGTERM)
    check(p.wait(10) == 0, "dev exits cleanly on SIGTERM")
    print("  allot dev ready in %.2f s" % ready)

    # --nodes N: a cluster of N emulated nodes on this machine; a gang
    # spreads over them.
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--state", os.path.join(c.root, "dev3"),
                          "--nodes", "3", "--fake-gpus", "2xH100-80GB"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready at"), "dev --nodes: %r" % line)
    r = subprocess.run([c.allot, "nodes", "--json"], env=env,
                       capture_output=True, text=True, timeout=30)
    names = sorted(n["name"] for n in json.loads(r.stdout))
    check(names == ["local-0", "local-1", "local-2"],
          "three emulated nodes: %s" % names)
    r = subprocess.run([c.allot, "submit", "--gpus", "2", "--tasks", "3",
                        "--", "true"], env=env, capture_output=True,
                       text=True, timeout=30)
    jid = r.stdout.strip()
    wait_for(done, 20, "the gang over three nodes to complete")
    r = subprocess.run([c.allot, "show", "--json", jid], env=env,
                       capture_output=True, text=True, timeout=30)
    check(len({t["node"] for t in json.loads(r.stdout)["placement"]}) == 3,
          "the gang ran on the three nodes")
    p.send_signal(signal.SIGTERM)
    check(p.wait(10) == 0, "dev --nodes exits cleanly on SIGTERM")


def scenario_script(c):
    """`allot submit job.sh`: #ALLOT directives, overrides, clear errors;
    time limits."""
    c.start_server()
    c.start_agent("n1", "4xH100-80GB")
    script = os.path.join(c.root, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                "# a training job\n"
                "#ALLOT --gpus 2 --name trainer\n"
                "#ALLOT --env MODE=fast\n"
                "\n"
                "echo script $1 MODE=$MODE CVD=$CUDA_VISIBLE_DEVICES\n"
                "#ALLOT --gpus 4\n")  # after the first command: ignored
    j = c.submit(script, "arg1")
    jj = c.wait_state(j, "completed")
    check(jj["name"] == "trainer" and jj["gpus"] == 2,
          "directives applied: %s %s" % (jj["name"], jj["gpus"]))
    out = c.cli("logs", str(j)).stdout
    check("script arg1 MODE=fast CVD=0,1" in out or
          "script arg1 MODE=fast CVD=2,3" in out, "script ran: %r" % out)
    j = c.submit("--gpus", "1", "--name", "override", script)
    jj = c.wait_state(j, "completed")
    check(jj["name"] == "override" and jj["gpus"] == 1,
          "the command line overrides directives")
    # After --, a file is a command, not a script to send.
    os.chmod(script, 0o755)
    j = c.submit("--", script, "x")
    jj = c.wait_state(j, "completed")
    check("script" not in jj and jj["gpus"] == 0, "-- runs a command")

    bad = os.path.join(c.root, "bad.sh")
    with open(bad, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --gpuz 2\n#ALLOT --gpus many\n"
                "#ALLOT --env NOEQUALS\n#ALLOT --mem 4Q\ntrue\n")
    p = c.cli("submit", bad, ok=False)
    check(p.returncode == 2, "bad directives exit 2")
    for line, what in ((2, "unknown option '--gpuz'"), (3, "--gpus wants"),
                       (4, "--env wants"), (5, "--mem wants")):
        check("%s:%d: %s" % (bad, line, what) in p.stderr,
              "line %d reported: %r" % (line, p.stderr))
    # Files that are neither a job script nor a program, and a script too
    # large to send, are refused (they were taken for commands that then
    # failed on the node, or ran without their #ALLOT options).
    noscript = os.path.join(c.root, "noshebang.sh")
    with open(noscript, "w") as f:
        f.write("echo no interpreter line\n")
    big = os.path.join(c.root, "big.sh")
    with open(big, "w") as f:
        f.write("#!/bin/sh\n#ALLOT --hold\n" + "# padding\n" * 60000)
    for path, what in ((noscript, "is neither a job script"),
                       (big, "is a job script larger than 512 KiB")):
        p = c.cli("submit", path, ok=False)
        check(p.returncode == 2 and what in p.stderr,
              "%s refused: %d %r" % (path, p.returncode, p.stderr))
    s_, b = c.api("GET", "/v1/jobs?limit=1000")
    check(len(b["jobs"]) == 3, "nothing submitted from a bad script")
    # A program named without -- is still a command, and so is a name
    # without '/' (found on the node's PATH), whatever data file of that
    # name lies in the current directory.
    j = c.submit("/bin/true")
    check(c.wait_state(j, "completed")["command"] == ["/bin/true"],
          "a program runs as a command")
    with open(os.path.join(c.root, "hostname"), "w") as f:
        f.write("not a script\n")
    j = c.submit("hostname")
    check(c.wait_state(j, "completed")["command"] == ["hostname"],
          "a name without '/' is a command")

    # A Slurm job script runs unchanged: #SBATCH options become the
    # request (GPUs per node split over the tasks per node), each task gets
    # what srun would tell it, #ALLOT lines and the command line win.
    sl = os.path.join(c.root, "train.sbatch")
    with open(sl, "w") as f:
        f.write("#!/bin/bash\n"
                "#SBATCH --job-name=resnet\n"
                "#SBATCH --nodes=1 --ntasks-per-node=2\n"
                "#SBATCH --gres=gpu:4\n"
                "#SBATCH -c 1 --mem=8G\n"
                "#SBATCH --time=0-00:10:00\n"
                "#SBATCH -o slurm-%j.out   # Slurm's output file\n"
                "echo rank=$SLURM_PROCID/$SLURM_NTASKS "
                "local=$SLURM_LOCALID job=$SLURM_JOB_ID "
                "gpus=$CUDA_VISIBLE_DEVICES\n")
    p = c.cli("submit", sl)
    j = int(p.stdout.strip())
    check("train.sbatch:7: note: #SBATCH -o does not apply here" in p.stderr,
          "ignored Slurm options are noted: %r" % p.stderr)
    jj = c.wait_state(j, "completed")
    check(jj["name"] == "resnet" and jj["tasks"] == 2 and jj["gpus"] == 2 and
          jj["time_limit"] == 600 and jj["mem_bytes"] == 4 << 30 and
          jj["cpu_milli"] == 1000, "#SBATCH read: %s" % jj)
    outs = [c.cli("logs", "--task", str(t), str(j)).stdout for t in (0, 1)]
    check("rank=0/2 local=0 job=%d" % j in outs[0] and
          "rank=1/2 local=1 job=%d" % j in outs[1], "srun's variables: %r" % outs)
    j = c.submit("--gpus", "1", "--name", "small", sl)
    jj = c.wait_state(j, "completed")
    check(jj["name"] == "small" and jj["gpus"] == 1 and jj["tasks"] == 2,
          "the command line overrides #SBATCH: %s" % jj)
    sb = os.path.join(c.root, "bad.sbatch")
    with open(sb, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --array=0-9\n#SBATCH --time=soon\n"
                "#SBATCH --dependency=afterburner:3\ntrue\n")
    p = c.cli("submit", sb, ok=False)
    check(p.returncode == 2 and "bad.sbatch:3: #SBATCH --time: cannot use 'soon'" in p.stderr and
          "bad.sbatch:4: #SBATCH --dependency" in p.stderr,
          "unsupported #SBATCH options are errors: %r" % p.stderr)

    # A job past its time limit is stopped and marked failed.
    t = c.submit("--time", "1", "--", "sleep", "30")
    jj = c.wait_state(t, "failed", timeout=15)
    check(any(e["event"] == "timeout" for e in jj["history"]), "timeout")

    # --after takes several ids, --time Slurm's forms too.
    h1 = c.submit("--hold", "--", "true")
    h2 = c.submit("--hold", "--", "true")
    d = c.submit("--after", "%d,%d" % (h1, h2), "--time", "00:10:00", "--",
                 "true")
    jd = c.job(d)
    check(jd["after"] == [h1, h2] and jd["time_limit"] == 600,
          "--after 2 ids, --time 00:10:00: %s %s" % (jd["after"],
                                                     jd["time_limit"]))
    out = c.cli("show", str(d)).stdout
    check("time limit 600 s" in out and "after      %d %d" % (h1, h2) in out,
          "show says the limit and what it waits for: %r" % out)
    c.cli("release", str(h1))
    c.wait_state(h1, "completed")
    time.sleep(0.3)
    check(c.job(d)["state"] == "pending", "it waits for both")
    c.cli("release", str(h2))
    c.wait_state(d, "completed")

    # logs -f --json: a character written in two pieces stays text.
    u = c.submit("--", "sh", "-c", "printf 'caf\\303'; sleep 1.5; "
                 "printf '\\251\\n'")
    c.wait_state(u, "running")
    objs = [json.loads(line) for line in
            c.cli("logs", "-f", "--json", str(u)).stdout.splitlines()]
    check(all("text" in o and o["restart"] == 0 for o in objs) and
          "".join(o["text"] for o in objs) == "caf\u00e9\n",
          "a split UTF-8 character: %s" % objs)


def scenario_nvml(c):
    """The agent finds GPUs through NVML (a fake libnvidia-ml) and gives a
    job their UUIDs; without a working NVML it offers none."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    check(lib and os.path.exists(lib), "ALLOT_TEST_FAKE_NVML names the fake")
    c.start_server()
    c.start_agent("gpu", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "8"})
    c.start_agent("broken", None, {"ALLOT_NVML_LIB": lib,
                                   "FAKE_NVML_FAIL": "1"})
    c.start_agent("none", None, {"ALLOT_NVML_LIB": "/nonexistent/nvml.so"})
    c.start_agent("pairs", None, {"ALLOT_NVML_LIB": lib, "FAKE_NVML_GPUS": "4",
                                  "FAKE_NVML_NVLINK": "pairs"})
    nodes = {n["name"]: n for n in json.loads(c.cli("nodes", "--json").stdout)}
    # NVLink domains from the link graph: an NVSwitch joins all, pairs of
    # directly linked GPUs make a domain each.
    check([x["nvlink"] for x in nodes["gpu"]["gpus"]] == [0] * 8,
          "one NVLink domain through the switch: %s" % nodes["gpu"]["gpus"])
    check([x["nvlink"] for x in nodes["pairs"]["gpus"]] == [0, 0, 1, 1],
          "NVLink pairs: %s" % nodes["pairs"]["gpus"])
    p = subprocess.run([c.allot, "agent", "--probe"], capture_output=True,
                       text=True, timeout=30,
                       env=dict(c.env, ALLOT_NVML_LIB=lib, FAKE_NVML_GPUS="2",
                                FAKE_NVML_NVLINK="cpu"))
    check([g["nvlink"] for g in json.loads(p.stdout)["gpus"]] == [-1, -1],
          "an NVLink to a CPU makes no GPU domain: %s" % p.stdout)
    # Telemetry: the agent samples real GPUs and the nodes API shows it
    # (the fake: GPU i is 10*i % 100 busy, uses i GiB, draws 100+i W).
    gg = wait_for(lambda: (lambda n: n if "util" in n["gpus"][3] else None)(
        {x["name"]: x for x in c.api("GET", "/v1/nodes")[1]["nodes"]}["gpu"]),
        10, "telemetry of node gpu")
    check(gg["gpus"][3]["util"] == 30 and gg["gpus"][3]["mem_used"] == 3 << 30
          and gg["gpus"][3]["power_mw"] == 103000 and
          gg["gpus"][3]["temp_c"] == 33, "telemetry: %s" % gg["gpus"][3])
    out = c.cli("nodes").stdout
    row = [l for l in out.splitlines() if l.startswith("gpu ")][0]
    check("UTIL" in out and " 35%" in row and "28.0G" in row,
          "allot nodes shows utilisation and GPU memory: %r" % out)
    # allot agent --probe says what a node offers, with a telemetry sample.
    p = subprocess.run([c.allot, "agent", "--probe"], capture_output=True,
                       text=True, timeout=30,
                       env=dict(c.env, ALLOT_NVML_LIB=lib, FAKE_NVML_GPUS="2"))
    pr = json.loads(p.stdout)
    check(p.returncode == 0 and not pr["emulated"] and
          pr["gpus"][1]["sample"]["util"] == 10 and
          pr["gpus"][1]["sample"]["power_mw"] == 101000,
          "--probe: %s" % p.stdout)
    g = nodes["gpu"]
    check(len(g["gpus"]) == 8 and not g["emulated"], "8 real GPUs: %s" % g)
    check(g["gpus"][0]["model"] == "A100-SXM4-40GB" and
          g["gpus"][0]["mem_bytes"] == 40 << 30 and
          [x["numa"] for x in g["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1],
          "model, memory and NUMA from NVML: %s" % g["gpus"][0])
    check(nodes["broken"]["gpus"] == [] and nodes["none"]["gpus"] == [],
          "no GPUs without a working NVML")
    j = c.submit("--gpus", "2", "--", "sh", "-c",
                 "echo CVD=$CUDA_VISIBLE_DEVICES EMU=$ALLOT_EMULATED_GPUS")
    jj = c.wait_state(j, "completed")
    on = nodes[jj["placement"][0]["node"]]
    uuids = ",".join(on["gpus"][d]["uuid"] for d in jj["placement"][0]["gpus"])
    out = c.cli("logs", str(j)).stdout
    check("CVD=%s EMU=" % uuids in out and uuids.startswith("GPU-fa4e"),
          "CUDA_VISIBLE_DEVICES holds the UUIDs: %r" % out)
    # --gpu-model: the NVML model runs, another waits with a reason.
    m = c.submit("--gpus", "1", "--gpu-model", "A100-SXM4-40GB", "--", "true")
    c.wait_state(m, "completed")
    h = c.submit("--gpus", "1", "--gpu-model", "H100-80GB", "--", "true")
    jj = wait_for(lambda: (lambda j: j if j.get("reason") else None)(
        c.job(h)), 10, "a reason for the H100 job")
    check(jj["state"] == "pending", "no H100 here: %s" % jj)


def scenario_demo(c):
    """`allot dev --demo` shows borrowing and reclaim on the dev node."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)
    log = open(os.path.join(c.root, "dev.log"), "wb")
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--demo"], stdout=subprocess.PIPE, stderr=log,
                         env=env, start_new_session=True)
    c.procs.append(p)
    lines = [p.stdout.readline().decode() for _ in range(7)]
    check(lines[-1].startswith("demo: joe submitted"), "demo: %r" % lines)

    def jobs():
        r = subprocess.run([c.allot, "ls", "--all", "--json"], env=env,
                           capture_output=True, text=True, timeout=30)
        return json.loads(r.stdout) if r.returncode == 0 else []

    def reclaimed():
        js = jobs()
        joe = [j for j in js if j["user"] == "joe"]
        susan = [j for j in js if j["user"] == "susan"]
        return (joe and joe[0]["state"] == "running" and
                sum(j["restart_count"] for j in susan) == 1 and
                all(j["state"] == "running" for j in js
                    if j["user"] == "jemma"))
    wait_for(reclaimed, 15, "joe's job to run by reclaim")
    p.send_signal(signal.SIGTERM)
    check(p.wait(10) == 0, "dev exits cleanly")


def scenario_store(c):
    """The store unavailable (another process holds its lock past the busy
    timeout): 503 with a JSON error and nothing half-done; then recovery.
    A cancel refused that way must not reach the agent either: its task
    keeps running."""
    import sqlite3
    import threading
    c.start_server()
    c.start_agent("n1")
    a = c.submit("--", "true")
    runner = c.submit("--", "sleep", "120")
    c.wait_state(runner, "running")
    wait_for(lambda: task_record(c.root, "agent-n1", runner), 10,
             "the task's record")
    db = sqlite3.connect(os.path.join(c.state, "allot.db"),
                         isolation_level=None, timeout=5,
                         check_same_thread=False)
    db.execute("BEGIN EXCLUSIVE")
    # The loop waits up to 5 s (busy timeout) for the lock, possibly in an
    # iteration that began just before the request came, and the reload
    # after a failed commit waits as long again: hold it longer than the
    # two requests' waits.
    release = threading.Timer(25.0, lambda: db.execute("ROLLBACK"))
    release.start()
    try:
        st, b = c.api("POST", "/v1/jobs/%d/cancel" % runner)
        check(st == 503, "cancel refused while locked: %s %s" % (st, b))
        st, b = c.api("POST", "/v1/jobs", {"command": ["true"]})
        check(st == 503 and b["error"] == "unavailable",
              "503 while the store is locked: %s %s" % (st, b))
    finally:
        release.join()
    db.close()
    st, b = c.api("POST", "/v1/jobs", {"command": ["true"]})
    check(st == 201 and b["id"] == runner + 1, "recovered: %s %s" % (st, b))
    st, b = c.api("GET", "/v1/jobs")
    check([j["id"] for j in b["jobs"]] == [a, runner, runner + 1],
          "the refused job left no trace")
    time.sleep(3)  # a few syncs
    j = c.job(runner)
    check(j["state"] == "running" and j["restart_count"] == 0,
          "the refused cancel did not stop the task: %s %s" %
          (j["state"], j.get("reason")))
    check(task_record(c.root, "agent-n1", runner), "its task is still there")
    c.cli("cancel", str(runner))
    c.wait_state(runner, "cancelled")


def scenario_run_as_user(c):
    """A root agent runs each task as the Unix user who submitted it."""
    if os.geteuid() != 0:
        print("skipped: needs root (to create a user and switch to it)")
        sys.exit(77)
    user = "allot-e2e"
    if subprocess.run(["id", "-u", user], capture_output=True).returncode:
        subprocess.run(["useradd", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", user], check=True)
    c.start_server()
    c.start_agent("n1", "2xH100-80GB", as_user=True)
    tok = c.api("POST", "/v1/tokens", {"user": user})[1]["token"]
    # The job runs in the directory it was submitted from (the CLI's,
    # c.root): let the user enter it, and write in work/.
    work = os.path.join(c.root, "work")
    os.mkdir(work)
    os.chmod(c.root, 0o755)
    os.chmod(work, 0o777)
    p = c.cli("submit", "--", "sh", "-c", "id -un; touch work/mine",
              token=tok)
    jid = int(p.stdout.split()[-1])
    j = c.wait_state(jid, "completed")
    check(c.cli("logs", str(jid)).stdout.split()[0] == user,
          "the task ran as its submitter")
    check(pwd.getpwuid(os.stat(os.path.join(work, "mine")).st_uid).pw_name
          == user, "its files belong to the submitter")
    # A submitter without an account on the node: the task fails and says
    # why (never runs as root).
    p = c.cli("submit", "--", "id", "-un")
    jid = int(p.stdout.split()[-1])
    j = c.wait_state(jid, "failed")
    check("cannot run as user" in c.cli("logs", str(jid)).stdout,
          "an unknown user is refused, with a reason")
    check(j["exit_code"] == 126, "exit code 126")


def scenario_many_tasks(c):
    """More tasks on a node than its agent's soft limit of open files: the
    spawner holds a descriptor per running task, so it raises its own soft
    limit to the hard one, and gives each task the limit the agent was
    started with.  The agent starts with a soft limit of 64 (hard 4096)
    and runs 100 tasks at once."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        print("skip: hard limit of open files %d" % hard)
        return
    c.start_server()
    c.start_agent("n1", gpus=None, extra=["--cpus", "64"],
                  preexec=lambda: resource.setrlimit(
                      resource.RLIMIT_NOFILE, (64, 4096)))
    out = os.path.join(c.root, "out")
    os.mkdir(out)
    n = 100
    ids = []
    for _ in range(n):
        s, b = c.api("POST", "/v1/jobs", {
            "command": ["sh", "-c",
                        "ulimit -Sn > %s/$ALLOT_JOB_ID.tmp && "
                        "mv %s/$ALLOT_JOB_ID.tmp %s/$ALLOT_JOB_ID; "
                        "exec sleep 120" % (out, out, out)],
            "cpu_milli": 100})
        check(s == 201, "submit: %s %s" % (s, b))
        ids.append(b["id"])
    wait_for(lambda: len([f for f in os.listdir(out)
                          if not f.endswith(".tmp")]) == n, 60,
             "%d tasks running at once" % n)
    limits = set(open(os.path.join(out, f)).read().strip()
                 for f in os.listdir(out))
    check(limits == {"64"}, "tasks keep the agent's limit: %s" % limits)
    for j in ids:
        c.api("POST", "/v1/jobs/%d/cancel" % j)
    wait_for(lambda: all(c.job(j)["state"] == "cancelled" for j in ids), 60,
             "every job cancelled")


def scenario_order(c):
    """Inside a queue the shorter time limit starts first: one GPU, busy;
    a job limited to 2 h waits, then one limited to 5 min and one with no
    limit (counted as 24 h).  When the GPU frees, the 5-minute job starts,
    and the others wait in the order 2 h, none."""
    c.start_server()
    c.start_agent("n1", "1xH100-80GB")
    busy = c.submit("--gpus", "1", "--", "sleep", "60")
    c.wait_state(busy, "running")
    long_ = c.submit("--gpus", "1", "--time", "2h", "--", "sleep", "60")
    none = c.submit("--gpus", "1", "--", "sleep", "60")
    short = c.submit("--gpus", "1", "--time", "5m", "--", "sleep", "60")
    c.cli("cancel", str(busy))
    c.wait_state(short, "running")
    check(c.job(long_)["state"] == "pending" and
          c.job(none)["state"] == "pending", "the longer ones wait")
    c.cli("cancel", str(short))
    c.wait_state(long_, "running")
    check(c.job(none)["state"] == "pending", "no limit counts as 24 h")
    for j in (long_, none):
        c.cli("cancel", str(j), ok=False)


def scenario_connections(c):
    """Many open connections cost descriptors, not threads: 1,500 idle
    connections (past the usual soft limit of 1,024 descriptors) and 20
    requests sent a byte at a time, while other requests are answered at
    once; the server's threads stay a handful."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        raise Fail("this test needs a hard limit of 4,096 descriptors or "
                   "more (ulimit -Hn is %d)" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    c.start_server()
    idle = [socket.create_connection(("127.0.0.1", c.port))
            for _ in range(1500)]
    slow = [socket.create_connection(("127.0.0.1", c.port))
            for _ in range(20)]
    req = ("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           "%s\r\nContent-Type: application/json\r\nContent-Length: %d"
           "\r\n\r\n%s")
    body = json.dumps({"command": ["true"], "hold": True})
    raw = (req % (c.admin, len(body), body)).encode()
    half = len(raw) // 2
    for sk in slow:
        for i in range(half):
            sk.send(raw[i:i + 1])
    wait_for(lambda: len(os.listdir("/proc/%d/fd" % c.server.pid)) > 1520,
             20, "the server to accept 1,520 connections")
    t0 = time.time()
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"], "hold": True})
    check(s == 201, "a submission among 1,520 open connections: %s %s" %
          (s, b))
    check(time.time() - t0 < 5, "answered at once: %.1f s" %
          (time.time() - t0))
    threads = len(os.listdir("/proc/%d/task" % c.server.pid))
    check(threads <= 8, "the server runs %d threads for 1,520 connections" %
          threads)
    for sk in slow:
        sk.sendall(raw[half:])
    ids = []
    for sk in slow:
        sk.settimeout(10)
        resp = b""
        while b"\r\n\r\n" not in resp or not resp.rstrip().endswith(b"}"):
            chunk = sk.recv(65536)
            if not chunk:
                break
            resp += chunk
        check(resp.startswith(b"HTTP/1.1 201"), "slow request: %r" % resp[:60])
        ids.append(json.loads(resp.split(b"\r\n\r\n", 1)[1])["id"])
    check(sorted(ids) == list(range(2, 22)), "slow submissions: %s" % ids)
    for sk in idle + slow:
        sk.close()
    s, b = c.api("GET", "/v1/jobs?limit=1000")
    check(s == 200 and len(b["jobs"]) == 21, "21 jobs: %s" % len(b["jobs"]))


def scenario_launch_crash(c):
    """The spawner dies after starting a sync's tasks and before saying so
    (fault injection: ALLOT_TEST_SPAWNER_CRASH).  The agent starts another
    and must not start those tasks a second time: their records show the
    first spawner started them; they are adopted, and their ends are still
    reported with their real exit status (the agent is a subreaper)."""
    c.start_server()
    marker = os.path.join(c.root, "crashed")
    c.start_agent("n1", env={"ALLOT_TEST_SPAWNER_CRASH": marker})
    out = os.path.join(c.root, "starts")
    ids = [c.submit("--", "sh", "-c",
                    "echo $ALLOT_JOB_ID >> %s; sleep 3; exit 7" % out)
           for _ in range(3)]
    wait_for(lambda: os.path.exists(marker), 15, "the spawner's crash")
    for j in ids:
        c.wait_state(j, ("completed", "failed"), timeout=30)
    starts = open(out).read().split()
    check(sorted(starts) == sorted(str(j) for j in ids),
          "each task started once: %s" % starts)
    for j in ids:
        job = c.job(j)
        check(job["state"] == "failed" and job["exit_code"] == 7,
              "job %d ended with its own exit code 7: %s %s" %
              (j, job["state"], job["exit_code"]))


def scenario_launch_hang(c):
    """A task whose start hangs (its working directory on a file system
    that does not answer; fault injection: ALLOT_TEST_LAUNCH_HANG) must not
    take the node with it: after --launch-timeout the hung start is killed
    before it runs anything, its job fails saying why, a task already
    running is kept, and later tasks start."""
    c.start_server()
    hang = os.path.join(c.root, "nfs-hung")
    os.mkdir(hang)
    c.start_agent("n1", env={"ALLOT_TEST_LAUNCH_HANG": hang},
                  extra=["--launch-timeout", "1000"])
    runner = c.submit("--", "sleep", "60")
    c.wait_state(runner, "running")
    marker = os.path.join(c.root, "ran")
    s, b = c.api("POST", "/v1/jobs", {"command": ["touch", marker],
                                       "cwd": hang})
    check(s == 201, "submit the job that hangs: %s %s" % (s, b))
    hung = b["id"]
    after = c.submit("--", "true")
    c.wait_state(hung, ("failed", "completed"), timeout=20)
    j = c.job(hung)
    check(j["state"] == "failed" and j["exit_code"] == 127,
          "the hung start failed: %s %s" % (j["state"], j["exit_code"]))
    p = c.cli("logs", str(hung))
    check("did not start within 1000 ms" in p.stdout,
          "its log says why: %r" % p.stdout)
    c.wait_state(after, "completed", timeout=20)
    log = open(os.path.join(c.root, "agent-n1.log")).read()
    killed = re.findall(r"killing process (\d+): a task's start that hangs",
                        log)
    check(len(killed) == 1, "one hung start killed: %s" % killed)
    wait_for(lambda: not os.path.exists("/proc/" + killed[0]) or
             open("/proc/%s/stat" % killed[0]).read().rsplit(")", 1)[1]
             .split()[0] == "Z", 10, "the hung start to die")
    check(not os.path.exists(marker), "the hung job never ran its program")
    r = c.job(runner)
    check(r["state"] == "running" and r["restart_count"] == 0,
          "the running task was kept: %s" % r["state"])
    n = [x for x in c.api("GET", "/v1/nodes")[1]["nodes"]
         if x["name"] == "n1"][0]
    check(n["state"] == "ready", "the node stayed ready: %s" % n["state"])
    c.cli("cancel", str(runner))
    c.wait_state(runner, "cancelled")
    # And the node goes on starting tasks.
    c.wait_state(c.submit("--", "true"), "completed", timeout=20)


def scenario_store_full(c):
    """Writes to the store fail mid-commit (the server's files may not grow
    past 1 MiB: RLIMIT_FSIZE, as a full disk would): submissions get 503,
    the server stays up and answers, and after a restart without the limit
    every job that got a 201 is there, and none that got a 503."""
    import resource

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    c.start_server(preexec=limited)
    accepted, refused = [], 0
    pad = "x" * 8000
    for i in range(400):
        s, b = c.api("POST", "/v1/jobs", {"command": ["echo", pad],
                                           "name": "j%d" % i, "hold": True})
        if s == 201:
            accepted.append((b["id"], "j%d" % i))
            continue
        check(s == 503 and b["error"] == "unavailable",
              "a failed commit answers 503: %s %s" % (s, b))
        refused += 1
        if refused == 20:
            break
    check(refused == 20, "commits failed once the files were full "
          "(%d accepted)" % len(accepted))
    check(len(accepted) > 10, "some were accepted first: %d" % len(accepted))
    s, b = c.api("GET", "/v1/jobs?limit=1000&state=held")
    check(s == 200 and [j["id"] for j in b["jobs"]] ==
          [a[0] for a in accepted],
          "the server answers, from the store's state: %s" % s)
    c.kill_server()
    c.start_server()
    s, b = c.api("GET", "/v1/jobs?limit=1000&state=held")
    got = [(j["id"], j["name"]) for j in b["jobs"]]
    check(got == accepted, "after a restart, exactly the %d accepted jobs: "
          "%d there" % (len(accepted), len(got)))
    s, b = c.api("POST", "/v1/jobs", {"command": ["true"]})
    check(s == 201 and b["id"] == accepted[-1][0] + 1,
          "the next job takes the next id: %s %s" % (s, b))


def scenario_state_lock(c):
    """One controller per state directory and one agent per agent state
    directory: a second is refused with a message naming the first (two
    controllers would hand out the same job ids, each overwriting the
    other's jobs in the store); the lock goes with its process however it
    ends, and a spawner left running by a killed agent does not hold it."""
    c.start_server()
    c.start_agent("n1")
    runner = c.submit("--", "sleep", "120")
    c.wait_state(runner, "running")

    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        c.state)
    check(rc == 1 and "in use by another allot controller (pid %d)" %
          c.server.pid in err, "a second controller refused: %d %r" %
          (rc, err))
    rc, err = c.refused("server", "--listen", "127.0.0.1:%d" % c.port,
                        "--state", os.path.join(c.root, "other"))
    check(rc == 1 and "cannot listen on 127.0.0.1:%d" % c.port in err,
          "a second controller on the same port refused: %d %r" % (rc, err))
    agent_state = os.path.join(c.root, "agent-n1")
    rc, err = c.refused("agent", "--server", c.url, "--join-token", c.join,
                        "--name", "n1", "--state", agent_state,
                        "--fake-gpus", "8xH100-80GB", "--no-run-as-user")
    check(rc == 1 and "in use by another allot agent (pid %d)" %
          c.agents["n1"].pid in err, "a second agent refused: %d %r" %
          (rc, err))
    a = c.submit("--", "true")
    c.wait_state(a, "completed")
    # kill -9: the locks go with the processes; the agent's spawner (and
    # the task under it) lives on without holding the agent's lock.
    c.kill_server()
    c.agents["n1"].send_signal(signal.SIGKILL)
    c.agents["n1"].wait(10)
    c.start_server()
    c.start_agent("n1")
    check(c.job(runner)["state"] == "running" and
          c.job(runner)["restart_count"] == 0,
          "the task was adopted, not restarted")
    b = c.submit("--", "true")
    c.wait_state(b, "completed")
    c.cli("cancel", str(runner))
    c.wait_state(runner, "cancelled")


def scenario_pg_store(c):
    """The controller's state in PostgreSQL (--store URI): the rows and the
    history are in the database's schema allot, not in STATE/allot.db; a
    second controller on the same database is refused; a restart of the
    database is survived; while it is down every call but healthz gets a
    503 and nothing half-done is kept; kill -9 of the controller with a
    crash of the database loses nothing; a newer schema and bad URIs are
    refused with clear errors."""
    c.store = ["--store", c.pg.uri]
    c.start_server()
    c.start_agent("n1")
    a = c.submit("--name", "first", "--", "true")
    c.wait_state(a, "completed")
    check(not os.path.exists(os.path.join(c.state, "allot.db")),
          "no SQLite file beside a PostgreSQL store")
    check(c.pg.sql("SELECT state FROM allot.jobs WHERE id = %d" % a) ==
          "completed", "the job's row is in the database")
    events = c.pg.sql("SELECT event FROM allot.job_events WHERE job_id = %d"
                      " ORDER BY seq" % a).split()
    hist = [e["event"] for e in c.job(a)["history"]]
    check(events and events == hist and "submitted" in events,
          "the history comes from the database: %s vs %s" % (events, hist))
    # Version 2 added the usage history's table, 3 users' settings,
    # groups and the fair-share usage, 4 the inference services' table,
    # 5 jobs' steps (srun inside a job).
    v = c.pg.sql("SELECT version FROM allot.schema_version")
    check(v == "5", "schema version 5: %s" % v)

    def server(state, store):
        return c.refused("server", "--listen", "127.0.0.1:0", "--state",
                         state, "--store", store)

    other = os.path.join(c.root, "other")
    rc, err = server(other, c.pg.uri)
    check(rc == 1 and "in use by another allot controller" in err and
          "(pid %d)" % c.server.pid in err,
          "a second controller on the database refused: %d %r" % (rc, err))

    # A restart of the database: the next call reconnects.
    c.pg.stop("fast")
    c.pg.start()
    b = c.submit("--", "true")
    c.wait_state(b, "completed", timeout=30)
    log = open(os.path.join(c.root, "server.log"), errors="replace").read()
    check("store: reconnected" in log, "the controller reconnected")

    # Down: 503 for everything but healthz, and nothing half-done kept.
    # The first call after the stop is a write the controller's own code
    # does not check (a token): it once got a 201 for a token never stored.
    c.pg.stop("fast")
    s, body = c.api("POST", "/v1/tokens", {"user": "tok", "role": "user"})
    check(s == 503, "a token made while the database is down: %s %s" %
          (s, body))
    s, body = c.api("POST", "/v1/jobs", {"command": ["true"]})
    check(s == 503 and body["error"] == "unavailable",
          "503 while the database is down: %s %s" % (s, body))
    s, body = c.api("GET", "/v1/jobs")
    check(s == 503, "reads too (the state is not known): %s" % s)
    check(c.healthz() is not None, "healthz answers")
    c.pg.start()
    wait_for(lambda: c.api("GET", "/v1/jobs")[0] == 200, 20,
             "the controller to be back")
    s, body = c.api("POST", "/v1/jobs", {"command": ["true"]})
    check(s == 201 and body["id"] == b + 1,
          "the refused job left no trace: %s %s" % (s, body))
    c.wait_state(b + 1, "completed", timeout=30)

    # A write the database refuses (a constraint added behind the
    # controller's back) fails its whole transaction: 503, nothing kept.
    c.pg.sql("ALTER TABLE allot.jobs ADD CONSTRAINT no_poison"
             " CHECK (doc NOT LIKE '%poison%')")
    s, body = c.api("POST", "/v1/jobs", {"command": ["true"],
                                          "name": "poison"})
    check(s == 503, "a refused write answers 503: %s %s" % (s, body))
    wait_for(lambda: c.api("GET", "/v1/jobs")[0] == 200, 20,
             "the controller to reload")
    c.pg.sql("ALTER TABLE allot.jobs DROP CONSTRAINT no_poison")
    s, body = c.api("POST", "/v1/jobs", {"command": ["true"], "name": "ok"})
    check(s == 201 and body["id"] == b + 2,
          "the refused job left no trace: %s %s" % (s, body))
    c.wait_state(b + 2, "completed", timeout=30)

    # kill -9 of the controller, then a crash of the database.
    held = c.submit("--hold", "--", "true")
    c.kill_server()
    c.pg.stop("immediate")
    c.pg.start()
    c.start_server()
    s, body = c.api("GET", "/v1/jobs?limit=100")
    got = [(j["id"], j["state"]) for j in body["jobs"]]
    check(got == [(a, "completed"), (b, "completed"), (b + 1, "completed"),
                  (b + 2, "completed"), (held, "held")],
          "everything is there: %s" % got)

    # A schema newer than this allot, and stores that do not work.
    c.kill_server()
    c.pg.sql("UPDATE allot.schema_version SET version = 99")
    rc, err = server(c.state, c.pg.uri)
    check(rc == 1 and "schema version 99 is newer" in err,
          "a newer schema refused: %d %r" % (rc, err))
    rc, err = server(other, "postgresql:///nosuch?host=%s&user=allot" %
                     c.pg.dir)
    check(rc == 1 and "cannot connect to the store" in err and "nosuch" in err,
          "a database that does not exist: %d %r" % (rc, err))
    rc, err = server(other, "mysql://localhost/allot")
    check(rc == 1 and "unknown store 'mysql://localhost/allot'" in err,
          "an unknown kind of store: %d %r" % (rc, err))


def scenario_fraction(c):
    """Fractional jobs placed on one GPU run at the same time on it: each
    of two 0.4-GPU jobs waits until it sees the other running (the agent
    once started the second only when the first had exited, while the
    controller showed both running)."""
    c.start_server()
    c.start_agent("n1", "1xA100-40GB")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    script = ("echo CVD=$CUDA_VISIBLE_DEVICES; touch %s/$ALLOT_JOB_ID; "
              "for i in $(seq 150); do [ $(ls %s | wc -l) -ge 2 ] && exit 0;"
              " sleep 0.1; done; exit 3" % (marks, marks))
    ids = [c.submit("--gpu-fraction", "0.4", "--", "sh", "-c", script)
           for _ in range(2)]
    jobs = [c.wait_state(i, ("completed", "failed"), timeout=40) for i in ids]
    check(all(j["state"] == "completed" for j in jobs),
          "both ran at once: %s" % [(j["state"], j.get("exit_code"))
                                    for j in jobs])
    gpus = [j["placement"][0]["gpus"] for j in jobs]
    check(gpus[0] == gpus[1] == [0], "on the same GPU: %s" % gpus)
    for i in ids:
        check("CVD=0" in c.cli("logs", str(i)).stdout, "CUDA_VISIBLE_DEVICES")
    out = c.cli("show", str(ids[0])).stdout
    check("1 x (0.40 of a GPU," in out, "show says the fraction: %r" % out)
    # An agent restarted beside running fractional tasks adopts them with
    # their shares: a 0.2 job placed beside two adopted 0.4 ones starts (it
    # waited for them once: adopted tasks counted as whole GPUs).
    long_ = [c.submit("--gpu-fraction", "0.4", "--", "sleep", "40")
             for _ in range(2)]
    for i in long_:
        c.wait_state(i, "running")
    c.agents["n1"].send_signal(signal.SIGKILL)
    c.agents["n1"].wait(10)
    c.start_agent("n1", "1xA100-40GB")
    small = c.submit("--gpu-fraction", "0.2", "--", "true")
    c.wait_state(small, "completed", timeout=15)
    check(all(c.job(i)["state"] == "running" for i in long_),
          "it ran beside the adopted tasks")
    for i in long_:
        c.cli("cancel", str(i))
    # Users see their own jobs only, on the nodes' GPUs too.
    busy = c.submit("--gpus", "1", "--", "sleep", "60")
    c.wait_state(busy, "running")
    s, b = c.api("POST", "/v1/tokens", {"user": "eve", "role": "user"})
    eve = b["token"]
    g_admin = c.api("GET", "/v1/nodes")[1]["nodes"][0]["gpus"][0]
    g_eve = c.api("GET", "/v1/nodes", token=eve)[1]["nodes"][0]["gpus"][0]
    check(g_admin.get("job") == busy and g_eve.get("busy") and
          "job" not in g_eve, "others' job ids hidden: %s %s" %
          (g_admin, g_eve))
    c.cli("cancel", str(busy))
    c.wait_state(busy, "cancelled")
    k = c.submit("--", "sh", "-c", "kill -TERM $$")
    c.wait_state(k, "failed")
    out = c.cli("show", str(k)).stdout
    check("killed by signal 15 (Terminated)" in out,
          "show names the signal: %r" % out)


def scenario_pg_restart_load(c):
    """PostgreSQL restarted twice (fast shutdown) while four clients submit
    and jobs run: submissions may get 503 meanwhile, but every job that got
    a 201 is in the database afterwards (read back by a restarted
    controller) and runs exactly once; none that got a 503 is there."""
    import threading
    c.store = ["--store", c.pg.uri]
    c.start_server()
    c.start_agent("n1", "8xH100-80GB")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    accepted, refused, lock = [], [0], threading.Lock()
    stop = threading.Event()

    def submitter(k):
        i = 0
        while not stop.is_set():
            i += 1
            name = "c%d-%d" % (k, i)
            try:
                s, b = c.api("POST", "/v1/jobs", {
                    "command": ["sh", "-c", "echo x >> %s/$ALLOT_JOB_ID" %
                                marks], "name": name})
            except OSError:
                continue
            with lock:
                if s == 201:
                    accepted.append((b["id"], name))
                elif s == 503:
                    refused[0] += 1
                else:
                    raise Fail("unexpected answer %s %s" % (s, b))

    threads = [threading.Thread(target=submitter, args=(k,))
               for k in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(2):
            wait_for(lambda: len(accepted) >= 40, 30, "submissions")
            c.pg.stop("fast")
            time.sleep(0.5)
            c.pg.start()
            n = len(accepted)
            wait_for(lambda: len(accepted) >= n + 40, 60,
                     "submissions after the restart")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    c.kill_server()
    c.start_server()
    s, b = c.api("GET", "/v1/jobs?limit=1000")
    check(s == 200 and b["next"] is None, "one page: %s" % s)
    got = {j["id"]: j["name"] for j in b["jobs"]}
    lost = [a for a in accepted if got.get(a[0]) != a[1]]
    check(not lost, "accepted jobs lost or changed: %s" % lost[:5])
    extra = set(got) - {a[0] for a in accepted}
    check(not extra, "jobs that were refused are there: %s" % sorted(extra))
    for jid, _ in accepted:
        c.wait_state(jid, "completed", timeout=60)
    for jid, _ in accepted:
        n = open(os.path.join(marks, str(jid))).read().count("x")
        check(n == 1, "job %d ran %d times" % (jid, n))
    log = open(os.path.join(c.root, "server.log"), errors="replace").read()
    print("  %d accepted, %d refused with 503 across two restarts; commits "
          "whose answer was lost: %d had committed, %d had not" %
          (len(accepted), refused[0], log.count("transaction had committed"),
           log.count("transaction had not committed")))

def free_port():
    """A port free now on loopback (for a program that cannot pick its own
    and say which)."""
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def scenario_metrics(c):
    """GET /metrics: who may read it (a metrics or admin token, or anyone
    on --metrics-listen's address, which serves nothing else), that
    promtool finds the exposition well formed, and that a real Prometheus
    scraping it answers PromQL with what `allot queues` says."""
    lib = os.environ.get("ALLOT_TEST_FAKE_NVML")
    c.start_server("--metrics-listen", "127.0.0.1:0")
    murl = open(os.path.join(c.state, "metrics-url")).read().strip()
    c.start_agent("n1", "8xH100-80GB")
    s, b = c.api("POST", "/v1/queues", {
        "name": "team", "quota": {"gpu": {"deserved": 2, "weight": 1}}})
    check(s == 201, "queue team: %s %s" % (s, b))
    jobs = [c.submit("--queue", "team", "--gpus", "2", "--", "sleep", "60")
            for _ in range(3)]
    for j in jobs:
        c.wait_state(j, "running")
    # A node of real (fake NVML) GPUs, for telemetry; nothing runs there.
    if lib and os.path.exists(lib):
        c.start_agent("gpu", None, {"ALLOT_NVML_LIB": lib,
                                    "FAKE_NVML_GPUS": "2"})
    wait = c.submit("--queue", "team", "--gpus", "8", "--gpu-model",
                    "H100-80GB", "--", "true")

    # Access on the API's listener.
    s, _ = c.api("GET", "/metrics", token=None)
    check(s == 401, "/metrics without a token: %s" % s)
    user = c.cli("token", "create", "--user", "alice").stdout.strip()
    s, b = c.api("GET", "/metrics", token=user)
    check(s == 403 and "metrics" in b["message"],
          "/metrics with a user token: %s %s" % (s, b))
    mtok = c.cli("token", "create", "--user", "prom", "--role",
                 "metrics").stdout.strip()
    s, text = c.api("GET", "/metrics", token=mtok)
    check(s == 200 and "# TYPE allot_jobs gauge" in text,
          "/metrics with a metrics token: %s %.200s" % (s, text))
    s, text = c.api("GET", "/metrics")
    check(s == 200 and "# TYPE allot_jobs gauge" in text,
          "/metrics with the admin token: %s" % s)
    for path in ("/v1/jobs", "/v1/whoami", "/v1/queues"):
        s, b = c.api("GET", path, token=mtok)
        check(s == 403, "a metrics token on %s: %s" % (path, s))

    # The metrics listener: /metrics without a token, nothing else.
    def get(url):
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    base = murl[:-len("/metrics")]
    with urllib.request.urlopen(murl, timeout=10) as r:
        ct = r.headers.get("Content-Type")
    check(ct == "text/plain; version=0.0.4; charset=utf-8",
          "the exposition format's content type: %r" % ct)
    s, text = get(murl)
    check(s == 200 and "allot_queue_allocated_gpus{queue=\"team\"} 6\n"
          in text, "metrics listener: %s %.300s" % (s, text))
    for path in ("/v1/healthz", "/v1/jobs", "/", "/metrics/x"):
        s, _ = get(base + path)
        check(s == 404, "metrics listener %s: %s" % (path, s))
    check("allot_jobs{queue=\"team\",state=\"running\",class=\"train\"} 3\n"
          in text and "allot_gpus{model=\"H100-80GB\"} 8\n" in text and
          "allot_gpus_allocated{model=\"H100-80GB\"} 6\n" in text and
          "allot_queue_borrowed_gpus{queue=\"team\"} 4\n" in text and
          "allot_queue_model_borrowed_gpus{queue=\"team\","
          "model=\"H100-80GB\"} 4\n" in text and
          "allot_queue_model_allocated_gpus{queue=\"team\","
          "model=\"H100-80GB\"} 6\n" in text and
          "allot_queue_model_allocated_gpus{queue=\"default\","
          "model=\"H100-80GB\"} 0\n" in text and
          "allot_nodes{state=\"ready\"}" in text,
          "jobs, GPUs and queues in the exposition: %s" % text)
    pend = wait_for(lambda: (lambda t: t if re.search(
        r'^allot_pending_jobs\{reason="(capacity|no_node_fits|no_victim|'
        r'reserved)"\} 1$', t, re.M) else None)(get(murl)[1]), 10,
        "job %d pending with a reason" % wait)
    check(pend, "pending by reason")
    # Wastage: a queue at its limit leaves a GPU idle while its next job,
    # which would fit there, waits.  The 8-GPU job never fits (6 held).
    s, b = c.api("POST", "/v1/queues", {
        "name": "lim", "quota": {"gpu": {"deserved": 0, "limit": 1}}})
    check(s == 201, "queue lim: %s %s" % (s, b))
    lim = [c.submit("--queue", "lim", "--gpus", "1", "--", "sleep", "60")
           for _ in range(2)]
    c.wait_state(lim[0], "running")
    t = wait_for(lambda: (lambda t: t if
                          'allot_gpus_idle_while_waiting{model="H100-80GB"} 1\n'
                          in t else None)(get(murl)[1]), 10,
                 "one idle GPU while job %d waits at its queue's limit" % lim[1])
    check('allot_gpus_idle{model="H100-80GB"} 1\n' in t,
          "idle GPUs: %s" % t)
    # By queue: refreshed at most every 5 s.
    t = wait_for(lambda: (lambda t: t if
                          'allot_queue_gpus_idle_while_waiting{queue="lim",'
                          'model="H100-80GB"} 1\n' in t else None)(
        get(murl)[1]), 10, "lim's waiting job by queue")
    check('allot_queue_gpus_idle_while_waiting{queue="team",'
          'model="H100-80GB"} 0\n' in t, "by queue: only lim's job: %s" % t)
    m = re.search(r'^allot_wastage_ratio (\S+)$', t, re.M)
    check(m and 0 <= float(m.group(1)) <= 1, "wastage ratio in %s" % t)
    m = re.search(r'^allot_api_request_duration_seconds_count\{method="POST",'
                  r'route="/v1/jobs",status="201"\} (\d+)$', t, re.M)
    check(m and int(m.group(1)) >= 6, "POST /v1/jobs durations: %s" % t)
    c.cli("cancel", str(lim[1]))
    t = wait_for(lambda: (lambda t: t if
                          'allot_gpus_idle_while_waiting{model="H100-80GB"} 0\n'
                          in t else None)(get(murl)[1]), 10,
                 "no wastage once nothing fitting waits")
    jobs.append(lim[0])
    if lib and os.path.exists(lib):
        # The fake NVML: GPU i is 10*i % 100 busy, uses i GiB, draws 100+i W.
        t = wait_for(lambda: (lambda t: t if "allot_gpu_power_watts{" in t
                              else None)(get(murl)[1]), 10, "GPU telemetry")
        for line in ('allot_gpu_utilization_ratio{node="gpu",gpu="1",'
                     'model="A100-SXM4-40GB"} 0.1',
                     'allot_gpu_memory_used_bytes{node="gpu",gpu="1",'
                     'model="A100-SXM4-40GB"} 1073741824',
                     'allot_gpu_power_watts{node="gpu",gpu="1",'
                     'model="A100-SXM4-40GB"} 101'):
            check(line + "\n" in t, "telemetry line %s in %s" % (line, t))

    # promtool's own check of the format and of Prometheus' conventions.
    promtool = shutil.which("promtool")
    check(promtool is not None, "promtool installed (scripts/deps)")
    p = subprocess.run([promtool, "check", "metrics"], input=get(murl)[1],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and p.stdout.strip() == "" and
          p.stderr.strip() == "",
          "promtool check metrics: %d %s %s" % (p.returncode, p.stdout,
                                               p.stderr))

    # A real Prometheus scrapes the metrics listener every second.
    prom = shutil.which("prometheus")
    check(prom is not None, "prometheus installed (scripts/deps)")
    cfg = os.path.join(c.root, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: allot\n"
                "    metrics_path: /metrics\n"
                "    static_configs:\n      - targets: ['%s']\n"
                % base[len("http://"):])
    pport = free_port()
    log = open(os.path.join(c.root, "prometheus.log"), "ab")
    pp = subprocess.Popen([prom, "--config.file=" + cfg,
                           "--storage.tsdb.path=" +
                           os.path.join(c.root, "tsdb"),
                           "--web.listen-address=127.0.0.1:%d" % pport],
                          stdout=log, stderr=subprocess.STDOUT,
                          start_new_session=True)
    log.close()
    c.procs.append(pp)

    def query(q):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            pport, urllib.parse.urlencode({"query": q}))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                res = json.loads(r.read())["data"]["result"]
        except (OSError, ValueError, KeyError):
            return None
        return res or None
    res = wait_for(lambda: query('allot_queue_allocated_gpus{queue="team"}'),
                   60, "Prometheus to scrape allot")
    queues = {q["name"]: q for q in
              json.loads(c.cli("queues", "--json").stdout)}
    check(len(res) == 1 and float(res[0]["value"][1]) ==
          queues["team"]["allocated"]["gpu"] == 6,
          "PromQL allocated GPUs of team %s == allot queues %s" %
          (res, queues["team"]["allocated"]))
    res = query('allot_queue_deserved_gpus{queue="team"}')
    check(res and float(res[0]["value"][1]) ==
          queues["team"]["quota"]["gpu"]["deserved"],
          "PromQL deserved of team: %s" % res)
    res = query('sum(allot_jobs{queue="team",state="running"})')
    check(res and float(res[0]["value"][1]) == 3, "PromQL running: %s" % res)
    res = wait_for(lambda: query(
        'sum(rate(allot_gpu_wasted_seconds_total[1m])) / '
        'sum(rate(allot_gpu_seconds_total[1m]))'), 30,
        "two scrapes for a rate")
    check(res and 0 <= float(res[0]["value"][1]) <= 1,
          "PromQL wastage ratio: %s" % res)
    res = query('up{job="allot"}')
    check(res and res[0]["value"][1] == "1", "Prometheus target up: %s" % res)
    for j in jobs + [wait]:
        c.cli("cancel", str(j), ok=False)
    # Counters of ended jobs count each job once, by how it ended (the
    # 8-GPU job may have run once the others were cancelled).
    def ended():
        return {m.group(1): int(m.group(2)) for m in re.finditer(
            r'^allot_jobs_ended_total\{state="(\w+)"\} (\d+)$',
            get(murl)[1], re.M)}
    e = wait_for(lambda: (lambda e: e if sum(e.values()) == 6 else None)(
        ended()), 10, "six ended jobs counted")
    check(e.get("cancelled", 0) >= 5 and e.get("failed", 0) == 0,
          "ended jobs by state: %s" % e)
    # A restart without the metrics listener leaves no stale address.
    c.kill_server(signal.SIGTERM)
    c.start_server()
    check(not os.path.exists(os.path.join(c.state, "metrics-url")),
          "STATE/metrics-url removed when no metrics listener runs")


def scenario_usage(c):
    """The usage history and accounting: samples every second (coarse rows
    every three), GET /v1/usage by queue and model agrees with what ran,
    a kill -9 and restart leaves no step twice and a gap no longer than it
    was down; `allot report` GPU-hours agree with the jobs' run times, a
    user sees their own rows only; `allot history` lists the ended jobs;
    bad periods are refused."""
    c.start_server("--usage-interval", "1", "--usage-rollup", "3")
    c.start_agent("n1", "4xH100-80GB", extra=("--no-run-as-user",))
    s, b = c.api("POST", "/v1/queues", {
        "name": "team", "quota": {"gpu": {"deserved": 2, "weight": 1}}})
    check(s == 201, "queue team: %s %s" % (s, b))
    alice = c.cli("token", "create", "--user", "alice").stdout.strip()
    t0 = time.time()
    a = c.submit("--queue", "team", "--gpus", "2", "--", "sleep", "4")
    b_ = c.submit("--queue", "team", "--gpus", "1", "--", "sleep", "4",
                  token=alice)
    for j in (a, b_):
        c.wait_state(j, "running")

    def series(by, step=1):
        s, u = c.api("GET", "/v1/usage?by=%s&from=%d&step=%d" %
                     (by, int(t0) - 5, step))
        check(s == 200, "usage by %s: %s %s" % (by, s, u))
        return {x[by]: x for x in u["series"]}
    q = wait_for(lambda: (lambda q: q if "team" in q and 3.0 in
                          q["team"]["allocated"] else None)(series("queue")),
                 15, "a sample with team's 3 GPUs")
    check(q["team"]["deserved"][-1] == 2.0, "deserved: %s" % q["team"])
    check(all(v is None or v >= 0 for v in q["team"]["pending"]),
          "pending: %s" % q["team"])
    m = series("model")["H100-80GB"]
    check(m["gpus"][-1] == 4.0 and 3.0 in m["allocated"],
          "model series: %s" % m)
    check("deserved" not in m and "idle" in m and "wasted" in m,
          "model series fields: %s" % sorted(m))
    for j in (a, b_):
        c.wait_state(j, "completed", timeout=30)

    # A kill -9 and a restart: no step twice, a gap no longer than the
    # time it was down (plus a step).
    time.sleep(1.5)
    c.kill_server(signal.SIGKILL)
    down = time.time()
    time.sleep(2)
    c.start_server("--usage-interval", "1", "--usage-rollup", "3")
    up = time.time()
    time.sleep(4)
    q = series("queue")["team"]
    ts = q["t"]
    check(len(ts) == len(set(ts)) and ts == sorted(ts),
          "no step twice: %s" % ts)
    gaps = [y - x for x, y in zip(ts, ts[1:]) if y - x > 1]
    check(len(gaps) <= 1 and all(g <= (up - down) + 3 for g in gaps),
          "one gap, as long as the restart (%.1fs): %s" % (up - down, ts))
    s, u = c.api("GET", "/v1/usage?by=queue&queue=team&from=%d" % (int(t0) - 5))
    check(s == 200 and [x["queue"] for x in u["series"]] == ["team"],
          "one queue's series: %s" % u)
    # Pending demand counts an array's elements, with jobs or not yet
    # (a window of them gets jobs at a time).
    s, b = c.api("POST", "/v1/queues", {
        "name": "capped", "quota": {"gpu": {"deserved": 0, "limit": 0}}})
    check(s == 201, "queue capped: %s %s" % (s, b))
    c.cli("submit", "--queue", "capped", "--gpus", "1", "--array", "0-1999",
          "--", "true")
    wait_for(lambda: (lambda q: q if "capped" in q and
                      q["capped"]["pending"] and
                      q["capped"]["pending"][-1] == 2000.0 else None)(
        series("queue")), 15, "2000 pending GPUs of the array in the samples")
    # Coarse rows: a query at a coarse step reads them.
    s, u = c.api("GET", "/v1/usage?by=queue&from=%d&step=3" % (int(t0) - 5))
    check(s == 200 and u["step"] == 3 and u["series"], "coarse rows: %s" % u)

    # The report: GPU-hours from the runs, 2 GPUs x a's run + 1 x b's.
    ja, jb = c.job(a), c.job(b_)
    want = (2 * (ja["end_ms"] - ja["start_ms"]) +
            (jb["end_ms"] - jb["start_ms"])) / 3.6e6
    rep = json.loads(c.cli("report", "--since", "-5m", "--json").stdout)
    rows = {r["key"]: r for r in rep["rows"]}
    check(abs(rows["team"]["gpu_hours"] - want) < 1e-6 and
          rows["team"]["started"] == 2 and rows["team"]["completed"] == 2,
          "report by queue %s, want %.6f GPU-h" % (rows, want))
    check(rows["team"]["used_gpu_hours"] is None and
          rows["team"]["efficiency"] is None,
          "emulated GPUs send no telemetry: used unknown: %s" % rows["team"])
    check(rep["total"]["wastage_ratio"] is not None and
          0 <= rep["total"]["wastage_ratio"] <= 1, "wastage: %s" % rep)
    rep = json.loads(c.cli("report", "--since", "-5m", "--by", "user",
                           "--json").stdout)
    check(sorted(r["key"] for r in rep["rows"]) == ["admin", "alice"],
          "by user (admin): %s" % rep["rows"])
    rep = json.loads(c.cli("report", "--since", "-5m", "--by", "user",
                           "--json", token=alice).stdout)
    check([r["key"] for r in rep["rows"]] == ["alice"] and
          abs(rep["rows"][0]["gpu_hours"] -
              (jb["end_ms"] - jb["start_ms"]) / 3.6e6) < 1e-6,
          "by user (alice sees her own): %s" % rep["rows"])
    out = c.cli("report", "--since", "-5m", "--by", "node").stdout
    check(re.search(r"^n1\s", out, re.M) and
          re.search(r"^total\s", out, re.M), "report by node: %s" % out)
    csv = c.cli("report", "--since", "-5m", "--csv").stdout.splitlines()
    check(csv[0].startswith("queue,gpu_hours,used_gpu_hours,efficiency") and
          csv[-1].startswith("total,"), "csv: %s" % csv)

    # History: both jobs, with their node; alice sees only hers.
    out = c.cli("history", "--since", "-5m").stdout
    check(re.search(r"^%d\s.*completed.*\sn1$" % a, out, re.M) and
          re.search(r"^%d\s" % b_, out, re.M), "history: %s" % out)
    h = json.loads(c.cli("history", "--json", token=alice).stdout)
    check([j["id"] for j in h] == [b_], "alice's history: %s" % h)
    # A cancelled job did not exit by itself: no exit status of 0.
    x = c.submit("--queue", "team", "--gpus", "1", "--", "sleep", "60")
    c.wait_state(x, "running")
    c.cli("cancel", str(x))
    c.wait_state(x, "cancelled")
    row = [r.split() for r in c.cli("history", "--state",
                                    "cancelled").stdout.splitlines()
           if r.startswith("%d " % x)]
    check(row and row[0][-3] == "-",
          "a cancelled job at once in the history, its EXIT '-': %s" % row)

    # Bad input: exit 2 from the CLI, 400 from the API.
    for args in (("report", "--since", "2026-13-01"),
                 ("report", "--since", "-1m", "--until", "-2m"),
                 ("report", "--by", "gpu"), ("history", "--until", "soon"),
                 ("report", "--json", "--csv"),
                 ("history", "--state", "running")):
        p = c.cli(*args, ok=False)
        check(p.returncode == 2 and p.stderr.strip(),
              "%s: %d %s" % (args, p.returncode, p.stderr))
    for path in ("/v1/usage?from=x", "/v1/usage?by=user", "/v1/usage?step=-1",
                 "/v1/usage?step=abc", "/v1/usage?by=queue&model=H100",
                 "/v1/usage?from=100&to=50", "/v1/usage?step=0",
                 "/v1/report?by=gpu", "/v1/report?since=-5"):
        s, b = c.api("GET", path)
        check(s == 400 and b.get("message"), "%s: %s %s" % (path, s, b))

    # The coarse step under way (1000 s here) has no coarse row yet: a
    # query at that step reads its fine rows, so the last step shows.
    c.kill_server(signal.SIGTERM)
    c.start_server("--usage-interval", "1", "--usage-rollup", "1000")

    def last_hour():
        s, u = c.api("GET", "/v1/usage?by=queue&from=%d&step=1000" %
                     (int(time.time()) - 3000))
        check(s == 200 and u["step"] == 1000, "coarse: %s %s" % (s, u))
        q = {x["queue"]: x for x in u["series"]}.get("capped")
        return q if q and q["t"] and q["pending"][-1] == 2000.0 else None
    q = wait_for(last_hour, 15, "the step under way at a coarse step")
    hours = {int(time.time() - d) // 1000 * 1000 for d in (0, 20)}
    check(q["t"][-1] in hours, "the last step: %s, want one of %s" %
          (q, hours))


def scenario_drain_reason(c):
    """`allot node drain --reason`: the reason is stored with the node
    (GET /v1/nodes' drain_reason, `allot nodes` under the table), kept
    across a kill -9 of the controller, cleared by a resume; a drain
    without one has none; a reason that is not one short line is 400."""
    c.start_server()
    c.start_agent("n1", "2xH100-80GB")

    def node():
        s, b = c.api("GET", "/v1/nodes")
        check(s == 200, "nodes: %s %s" % (s, b))
        return {n["name"]: n for n in b["nodes"]}["n1"]
    out = c.cli("node", "drain", "n1", "--reason", "fan swap at noon").stdout
    check("draining" in out or "drained" in out, "drain: %s" % out)
    n = node()
    check(n["drained"] and n.get("drain_reason") == "fan swap at noon",
          "the reason in GET /v1/nodes: %s" % n)
    out = c.cli("nodes").stdout
    check("n1: fan swap at noon\n" in out, "allot nodes: %s" % out)
    c.kill_server(signal.SIGKILL)
    c.start_server()
    n = node()
    check(n["drained"] and n.get("drain_reason") == "fan swap at noon",
          "the reason after a restart: %s" % n)
    check("ready" in c.cli("node", "resume", "n1").stdout, "resume")
    n = node()
    check(not n["drained"] and "drain_reason" not in n,
          "a resume clears the reason: %s" % n)
    c.cli("node", "drain", "n1")
    check("drain_reason" not in node(), "no reason given, none kept")
    c.cli("node", "resume", "n1")
    for body in ({"reason": 5}, {"reason": "a\nb"}, {"reason": "x" * 201}):
        s, b = c.api("POST", "/v1/nodes/n1/drain", body)
        check(s == 400 and "reason" in b.get("message", ""),
              "%s: %s %s" % (body, s, b))
    check(not node()["drained"], "a refused drain drains nothing")
    p = c.cli("node", "resume", "n1", "--reason", "x", ok=False)
    check(p.returncode == 2, "resume --reason: %d" % p.returncode)


SCENARIOS = {
    "run": scenario_run,
    "auth": scenario_auth,
    "crash": scenario_crash,
    "agent_restart": scenario_agent_restart,
    "node_down": scenario_node_down,
    "reclaim": scenario_reclaim,
    "dev": scenario_dev,
    "script": scenario_script,
    "nvml": scenario_nvml,
    "demo": scenario_demo,
    "store": scenario_store,
    "run_as_user": scenario_run_as_user,
    "many_tasks": scenario_many_tasks,
    "launch_crash": scenario_launch_crash,
    "order": scenario_order,
    "connections": scenario_connections,
    "launch_hang": scenario_launch_hang,
    "store_full": scenario_store_full,
    "state_lock": scenario_state_lock,
    "pg_store": scenario_pg_store,
    "fraction": scenario_fraction,
    "pg_restart_load": scenario_pg_restart_load,
    "metrics": scenario_metrics,
    "usage": scenario_usage,
    "drain_reason": scenario_drain_reason,
}


def main():
    # pg:SCENARIO runs a scenario with the controller's state in a private
    # PostgreSQL server instead of SQLite.
    arg = sys.argv[1] if len(sys.argv) == 3 else ""
    on_pg = arg.startswith("pg:")
    name = arg[3:] if on_pg else arg
    if name not in SCENARIOS:
        print("usage: e2e.py [pg:]{%s} ALLOT" % ",".join(SCENARIOS),
              file=sys.stderr)
        return 2
    allot = os.path.abspath(sys.argv[2])
    root = tempfile.mkdtemp(prefix="allot-e2e-%s-" % name)
    c = Cluster(allot, root)
    ok = False
    try:
        if on_pg or name.startswith("pg_"):
            c.pg = Postgres()
        if on_pg:
            c.store = ["--store", c.pg.uri]
        SCENARIOS[name](c)
        ok = True
    except Fail as e:
        print("FAIL %s: %s" % (name, e), file=sys.stderr)
    except Exception:
        traceback.print_exc()
    finally:
        bad = c.stop()
        if c.pg is not None:
            if not ok:
                shutil.copy(os.path.join(c.pg.dir, "postgres.log"),
                            os.path.join(root, "postgres.log"))
            c.pg.close()
    if ok and bad:
        print("FAIL %s: %s" % (name, "; ".join(bad)), file=sys.stderr)
        ok = False
    if ok:
        shutil.rmtree(root, ignore_errors=True)
        print("ok %s" % name)
        return 0
    print("logs kept in %s" % root, file=sys.stderr)
    for f in sorted(os.listdir(root)):
        if f.endswith(".log"):
            print("---- %s (tail)" % f, file=sys.stderr)
            with open(os.path.join(root, f), errors="replace") as fh:
                sys.stderr.write("".join(fh.readlines()[-25:]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
