#!/usr/bin/env python3
"""End-to-end tests of the event stream (GET /v1/events, `allot events
[-f]`) and the web dashboard (GET /), in a real headless Chromium driven
over the DevTools protocol.  The harness is e2e.py's (real server, agents
with emulated GPUs, the CLI).

The browser is Debian's chromium, started with --remote-debugging-pipe:
the protocol's JSON messages, each ended by a NUL byte, go over the
browser's descriptors 3 (in) and 4 (out), so no WebSocket library and
nothing from the network are needed.  Screenshots of each page go to
$ALLOT_TEST_SCREENSHOTS (the build directory's tests/server/screenshots
under meson), or to the scenario's directory.

Usage: e2e_web.py [pg:]SCENARIO PATH/TO/allot
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402


# -- server-sent events ------------------------------------------------------

def sse_parse(text):
    """[(event, data dict or None, id or None)] of a whole stream."""
    out = []
    for block in text.replace("\r", "").split("\n\n"):
        ev, data, eid = "message", None, None
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            if k == "event":
                ev = v
            elif k == "data":
                data = json.loads(v)
            elif k == "id":
                eid = v
        if data is not None:
            out.append((ev, data, eid))
    return out


def events(c, query, token="admin", headers=None):
    s, body = c.api("GET", "/v1/events?" + query, token=token,
                    headers=headers)
    check(s == 200, "GET /v1/events?%s: %s %s" % (query, s, body))
    return sse_parse(body)


class Stream:
    """A follower of GET /v1/events on a raw socket, read by a thread."""

    def __init__(self, c, query, token):
        host, port = c.url.split("//")[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), 10)
        self.sock.sendall((
            "GET /v1/events?%s HTTP/1.1\r\nHost: x\r\n"
            "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n"
            % (query, token)).encode())
        self.buf = b""
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                b = self.sock.recv(65536)
            except OSError:
                b = b""
            with self.lock:
                if not b:
                    self.closed = True
                    return
                self.buf += b

    def text(self):
        with self.lock:
            raw = self.buf
        head, _, body = raw.partition(b"\r\n\r\n")
        # Chunked: drop the chunk-size lines (enough for a test: the
        # messages themselves never hold a line of hex digits alone).
        lines = [ln for ln in body.decode(errors="replace").split("\r\n")
                 if not all(ch in "0123456789abcdef" for ch in ln) or not ln]
        return head.decode(), "\n".join(lines)

    def jobs(self):
        return [d for ev, d, _ in sse_parse(self.text()[1]) if ev == "job"]

    def close(self):
        self.sock.close()


def scenario_events(c):
    """GET /v1/events and `allot events [-f]`: state changes and decisions
    (a reclaim names the queue and the GPUs) arrive on a stream that is
    open, in order, once; a user sees their own jobs' events only; a cursor
    (since or Last-Event-ID) resumes without loss; a restart of the
    controller keeps the history (`allot events` shows it) and tells a
    stale cursor of the gap; bad queries are refused."""
    c.start_server()
    c.start_agent("n1", "4xH100-80GB")
    for q, d in (("susan", 2), ("joe", 2)):
        s, b = c.api("POST", "/v1/queues", {
            "name": q, "quota": {"gpu": {"deserved": d, "weight": 1}}})
        check(s == 201, "queue %s: %s %s" % (q, s, b))
    susan = c.cli("token", "create", "--user", "susan").stdout.strip()
    joe = c.cli("token", "create", "--user", "joe").stdout.strip()
    admin_stream = Stream(c, "", c.admin)
    joe_stream = Stream(c, "", joe)
    follower = subprocess.Popen(
        [c.allot, "events", "-f", "-n", "0", "--json"], env=c.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    c.procs.append(follower)
    time.sleep(0.5)  # the streams are open before anything happens
    # susan borrows all four GPUs; joe's job reclaims two of them.
    s1 = c.submit("--queue", "susan", "--gpus", "2", "--class", "train",
                  "--", "sleep", "600", token=susan)
    s2 = c.submit("--queue", "susan", "--gpus", "2", "--class", "train",
                  "--", "sleep", "600", token=susan)
    for j in (s1, s2):
        c.wait_state(j, "running")
    j1 = c.submit("--queue", "joe", "--gpus", "2", "--", "sleep", "600",
                  token=joe)
    c.wait_state(j1, "running")
    c.cli("cancel", str(j1))

    def seen(stream, n):
        js = stream.jobs()
        return js if len(js) >= n else None
    # submitted x3, started x3, preempted, cancelled, and susan's
    # requeued job starts again once joe's GPUs are free.
    got = wait_for(lambda: seen(admin_stream, 9), 15, "9 events on a stream")
    kinds = [(e["job"], e["event"]) for e in got]
    check(kinds[0] == (s1, "submitted") and
          kinds.index((s2, "submitted")) < kinds.index((s2, "started")) and
          kinds.index((j1, "started")) < kinds.index((j1, "cancelled")),
          "the order of events: %s" % kinds)
    ids = [e["id"] for e in got]
    check(ids == sorted(set(ids)), "ids grow, once each: %s" % ids)
    pre = [e for e in got if e["event"] == "preempted"]
    check(len(pre) == 1 and pre[0]["detail"].startswith(
        "queue joe reclaimed 2 GPUs (for job %d)" % j1) and
        pre[0]["user"] == "susan" and pre[0]["state"] == "pending",
        "the reclaim as a decision: %s" % pre)
    check(any(e["job"] == j1 and e["event"] == "cancelled" and
              e["state"] == "cancelled" for e in got),
          "the cancel on the stream: %s" % kinds)
    # joe sees his job's events only.
    jj = wait_for(lambda: seen(joe_stream, 3), 10, "joe's events")
    check({e["job"] for e in jj} == {j1} and
          [e["event"] for e in jj] == ["submitted", "started", "cancelled"],
          "joe's stream: %s" % jj)
    head = admin_stream.text()[0]
    check("text/event-stream" in head and "200" in head.split("\r\n")[0],
          "the stream's head: %r" % head)
    # `allot events -f`: the same events, as JSON lines, live.
    def followed():
        lines = []
        for ln in follower.stdout:
            lines.append(json.loads(ln))
            if len(lines) >= len(got):
                return lines
        return lines
    box = []
    t = threading.Thread(target=lambda: box.append(followed()), daemon=True)
    t.start()
    t.join(20)
    check(box and [e["id"] for e in box[0]] == ids,
          "allot events -f printed the stream: %s" % (box or "nothing"))
    follower.send_signal(signal.SIGTERM)
    follower.wait(10)
    # A cursor resumes after it: the query's and the header's.
    mid = ids[3]
    after = [d["id"] for ev, d, _ in events(c, "follow=false&since=%d" % mid)
             if ev == "job"]
    check(after[:len(ids) - 4] == ids[4:], "since=%d: %s" % (mid, after))
    after = [d["id"] for ev, d, _ in events(
        c, "follow=false", headers={"Last-Event-ID": str(mid)}) if ev == "job"]
    check(after[:len(ids) - 4] == ids[4:], "Last-Event-ID: %s" % after)
    victim = pre[0]["job"]  # submitted, started, preempted, started
    one = events(c, "follow=false&last=3&job=%d" % victim)
    check([d["event"] for ev, d, _ in one if ev == "job"] ==
          ["started", "preempted", "started"] and
          all(d["job"] == victim for ev, d, _ in one if ev == "job"),
          "job=%d&last=3: %s" % (victim, one))
    # A long poll answers at once with what is there, else when it comes.
    last = ids[-1]
    j2 = [None]

    def later():
        time.sleep(1)
        j2[0] = c.submit("--queue", "joe", "--gpus", "1", "--", "true",
                         token=joe)
    threading.Thread(target=later, daemon=True).start()
    polled = events(c, "poll=20&since=%d" % last, token=joe)
    # (Had it not answered on the event, it would have ended after 20 s
    # with none.)
    check([d["event"] for ev, d, _ in polled if ev == "job"][:1] ==
          ["submitted"], "a long poll: %s" % polled)
    wait_for(lambda: j2[0], 10, "the submission")
    c.wait_state(j2[0], "completed")
    # Bad queries: 400 with a reason; another's job: 404.
    for q in ("since=abc", "last=-1", "last=99999", "job=0", "follow=maybe",
              "poll=0", "poll=61", "since=1&last=2", "follow=false&poll=3"):
        s, b = c.api("GET", "/v1/events?" + q)
        check(s == 400 and b["error"] == "bad_request" and b["message"],
              "GET /v1/events?%s: %s %s" % (q, s, b))
    s, b = c.api("GET", "/v1/events?follow=false&since=1",
                 headers={"Last-Event-ID": "x"})
    check(s == 200, "since wins over a bad Last-Event-ID: %s" % s)
    s, b = c.api("GET", "/v1/events?follow=false",
                 headers={"Last-Event-ID": "x"})
    check(s == 400 and "Last-Event-ID" in b["message"],
          "a bad Last-Event-ID: %s %s" % (s, b))
    s, b = c.api("GET", "/v1/events?job=%d" % s1, token=joe)
    check(s == 404, "joe asks for susan's job's events: %s %s" % (s, b))
    s, b = c.api("GET", "/v1/events", token=None)
    check(s == 401, "no token: %s" % s)
    p = c.cli("events", "--since", "abc", ok=False)
    check(p.returncode == 2 and "--since" in p.stderr,
          "allot events --since abc: %d %r" % (p.returncode, p.stderr))
    # The history survives a restart: `allot events` shows it; a cursor
    # from before the restart is told of the gap and goes on live.
    admin_stream.close()
    joe_stream.close()
    for j in (s1, s2):  # the requeued one back, nothing more to come
        c.wait_state(j, "running")
    before = c.cli("events", "-n", "5").stdout.splitlines()
    check(len(before) == 5, "allot events -n 5: %s" % before)
    c.kill_server(signal.SIGTERM)
    c.start_server()
    c.wait_state(s2, "running")
    after = c.cli("events", "-n", "5").stdout.splitlines()
    check(after == before, "allot events across a restart:\n%s\n%s" %
          ("\n".join(before), "\n".join(after)))
    st = Stream(c, "since=%d" % last, c.admin)
    time.sleep(0.5)
    c.cli("cancel", str(s1))
    wait_for(lambda: any(e["job"] == s1 and e["event"] == "cancelled"
                         for e in st.jobs()), 10, "the cancel after restart")
    msgs = sse_parse(st.text()[1])
    check([ev for ev, _, _ in msgs][:2] == ["ready", "gap"] and
          [d["job"] for ev, d, _ in msgs if ev == "job"] == [s1],
          "a stale cursor after a restart: %s" % msgs)
    st.close()
    # The server stops with a stream open (libmicrohttpd may not stop
    # with a suspended connection).
    Stream(c, "", c.admin)
    time.sleep(0.3)


# -- the DevTools protocol ---------------------------------------------------

class Browser:
    """Headless Chromium over --remote-debugging-pipe: one page, its
    console errors and exceptions collected, dialogs accepted."""

    def __init__(self, root):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe is None:
            raise e2e.Fail("no chromium: scripts/deps installs it")
        to_r, to_w = os.pipe()      # our commands: browser's fd 3
        from_r, from_w = os.pipe()  # its answers: browser's fd 4

        # The shell puts the pipes at 3 and 4 (subprocess would close
        # descriptors a preexec_fn made there).
        args = ["/bin/sh", "-c", 'exec "$0" "$@" 3<&%d 4>&%d %d<&- %d>&-'
                % (to_r, from_w, to_r, from_w), exe, "--headless=new", "--remote-debugging-pipe",
                "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + os.path.join(root, "chromium"),
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(4, "--no-sandbox")  # the sandbox refuses root
        self.log = open(os.path.join(root, "chromium.log"), "wb")
        self.proc = subprocess.Popen(args, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     pass_fds=(to_r, from_w),
                                     start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self.w = os.fdopen(to_w, "wb")
        self.r = os.fdopen(from_r, "rb")
        self.next_id = 0
        self.answers = {}
        self.errors = []
        self.cv = threading.Condition()
        self.session = None
        threading.Thread(target=self._read, daemon=True).start()
        tid = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=tid,
                                 flatten=True)["sessionId"]
        for d in ("Page", "Runtime", "Log"):
            self.call(d + ".enable")

    def _read(self):
        buf = b""
        while True:
            b = self.r.read1(65536)
            if not b:
                with self.cv:
                    self.answers[None] = "closed"
                    self.cv.notify_all()
                return
            buf += b
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                self._dispatch(json.loads(raw))

    def _dispatch(self, m):
        if "id" in m:
            with self.cv:
                self.answers[m["id"]] = m
                self.cv.notify_all()
            return
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.consoleAPICalled" and p.get("type") in (
                "error", "assert"):
            self.errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description")))
                for a in p.get("args", []))))
        elif meth == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append("exception: %s %s" % (
                d.get("text"), d.get("exception", {}).get("description")))
        elif meth == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append("log: %s %s" % (p["entry"]["text"],
                                              p["entry"].get("url", "")))
        elif meth == "Page.javascriptDialogOpening":
            threading.Thread(target=lambda: self.call(
                "Page.handleJavaScriptDialog", accept=True),
                daemon=True).start()

    def call(self, method, **params):
        with self.cv:
            self.next_id += 1
            mid = self.next_id
        m = {"id": mid, "method": method, "params": params}
        if self.session is not None:
            m["sessionId"] = self.session
        self.w.write(json.dumps(m).encode() + b"\0")
        self.w.flush()
        with self.cv:
            ok = self.cv.wait_for(lambda: mid in self.answers or
                                  None in self.answers, 30)
            a = self.answers.pop(mid, None)
        if not ok or a is None:
            raise e2e.Fail("chromium: no answer to %s" % method)
        if "error" in a:
            raise e2e.Fail("chromium: %s: %s" % (method, a["error"]))
        return a["result"]

    def js(self, expr):
        """The value of a JavaScript expression (awaited) in the page."""
        r = self.call("Runtime.evaluate", expression=expr,
                      awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise e2e.Fail("js %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def until(self, expr, what, timeout=15):
        """Waits for expr to be true; an exception (the page still
        loading) counts as false."""
        def value():
            r = self.call("Runtime.evaluate", expression=expr,
                          awaitPromise=True, returnByValue=True)
            return None if "exceptionDetails" in r else \
                r["result"].get("value")
        try:
            return wait_for(value, timeout, what)
        except e2e.Fail as e:
            raise e2e.Fail("%s; the page says: %r" % (e, self.js(
                "document.querySelector('main').innerText.slice(0, 400)")))

    def size(self, w, h, mobile=False):
        self.call("Emulation.setDeviceMetricsOverride", width=w, height=h,
                  deviceScaleFactor=1, mobile=mobile)

    def shot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close")
        except e2e.Fail:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.log.close()


def scenario_dashboard(c):
    """The dashboard in headless Chromium on `allot dev --demo`: the page
    and its files come with a content security policy and no inline
    script; a bad token is refused, a good one kept in the tab's session
    storage and never in the URL; every page shows the demo (nodes with
    emulated GPU cells, queues with borrowing, jobs with their pending
    reasons, a job's timeline and log); a cancel from the page and a
    change made elsewhere both show without a reload; a user's token sees
    their own jobs only; a phone-sized viewport does not scroll sideways;
    no console errors.  Screenshots of each page at 1280x800 and 390x844."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)
    state = os.path.join(c.root, "dev-state")
    log = open(os.path.join(c.root, "dev.log"), "wb")
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--state", state, "--demo"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True)
    c.procs.append(p)
    lines = [p.stdout.readline().decode() for _ in range(7)]
    check(lines[-1].startswith("demo: joe submitted"), "demo: %r" % lines)
    c.url = open(os.path.join(state, "url")).read().strip()
    c.admin = open(os.path.join(state, "admin-token")).read().strip()
    c.env["ALLOT_SERVER"] = c.url
    c.env["ALLOT_TOKEN"] = c.admin
    shots = os.environ.get("ALLOT_TEST_SCREENSHOTS") or \
        os.path.join(c.root, "screenshots")
    os.makedirs(shots, exist_ok=True)
    # The files: a policy that allows no inline script; no token needed.
    with urllib.request.urlopen(c.url + "/", timeout=10) as r:
        csp = r.headers.get("Content-Security-Policy", "")
        page = r.read().decode()
        check(r.status == 200 and "text/html" in r.headers["Content-Type"],
              "GET /: %s %s" % (r.status, r.headers["Content-Type"]))
    check("script-src 'self'" in csp and "unsafe-inline" not in csp and
          "frame-ancestors 'none'" in csp, "the policy: %r" % csp)
    check(not re.search(r"<script(?![^>]*\bsrc=)", page) and
          not re.search(r"\son[a-z]+\s*=", page),
          "no inline script or handler in the page")
    s, b = c.api("GET", "/ui/nope.js", token=None)
    check(s == 404, "an unknown file: %s" % s)
    br = Browser(c.root)
    try:
        dashboard(c, br, shots, env)
        check(not br.errors, "console errors: %s" % br.errors)
    finally:
        br.close()
    print("screenshots in %s" % shots)


def dashboard(c, br, shots, env):
    br.size(1280, 800)
    br.call("Page.navigate", url=c.url + "/")
    br.until("!document.querySelector('#login').hidden", "the login form")
    # A bad token is refused with a message, and not kept.
    br.js("document.querySelector('#token').value = 'al_nope';"
          "document.querySelector('#login').requestSubmit(); true")
    br.until("document.querySelector('#login-error').textContent",
             "the refusal of a bad token")
    check(br.js("sessionStorage.length") == 0, "a bad token is not kept")
    # Chromium logs the refusal itself (a 401 answer) as an error; that
    # one was asked for.
    check(all("401" in e and "/v1/whoami" in e for e in br.errors),
          "errors of a bad token: %s" % br.errors)
    br.errors.clear()
    br.shot(os.path.join(shots, "login.png"))
    br.js("document.querySelector('#token').value = %s;"
          "document.querySelector('#login').requestSubmit(); true"
          % json.dumps(c.admin))
    br.until("document.querySelector('#page-overview') && "
             "Number(document.body.dataset.updates) >= 1", "the overview")
    check(br.js("sessionStorage.getItem('allot.token')") == c.admin and
          c.admin not in br.js("location.href"),
          "the token in session storage, not in the URL")
    br.until("document.querySelector('#live').textContent === 'live'",
             "the live stream")
    paint = br.js("(performance.getEntriesByName('first-contentful-paint')"
                  "[0] || {}).startTime")
    print("first contentful paint: %s ms after navigation" % (
        "%.0f" % paint if paint is not None else "?"))
    counts = br.js("Object.fromEntries([...document.querySelectorAll("
                   "'[data-state]')].map(e => [e.dataset.state, "
                   "Number(e.textContent)]))")
    check(counts.get("running", 0) >= 4, "jobs by state: %s" % counts)
    # Every state has its count and badge, out_of_memory's in words.
    br.until("(document.querySelector('[data-state=out_of_memory]') || {})"
             ".textContent === '0' && document.querySelector("
             "'[data-state=failed]').textContent === '0'",
             "no job out of memory (none failed) in the last 24 hours")
    check(br.js("document.querySelector('.states a[href$=\"out_of_memory\"]"
                " .st-out_of_memory').textContent") == "out of memory",
          "the out_of_memory badge")
    check(br.js("document.querySelectorAll('.bar-row').length") >= 4 and
          "borrows" in br.js("document.querySelector('.bars').textContent"),
          "queue bars with borrowing")
    br.until("document.querySelectorAll('#events li').length >= 5",
             "the live feed's backlog")
    br.shot(os.path.join(shots, "overview.png"))
    # Nodes: a cell per GPU, emulated ones marked.
    br.js("location.hash = '#/nodes'; true")
    br.until("document.querySelectorAll('#page-nodes .gpu').length === 8",
             "eight GPU cells")
    check(br.js("document.querySelectorAll('.gpu.gemu').length") == 8 and
          br.js("document.querySelectorAll('.gpu.gfree').length") <
          8, "emulated, allocated cells")
    br.shot(os.path.join(shots, "nodes.png"))
    # A drain (no job event on the stream) shows without a reload, with
    # the admin's reason; a resume takes it away.
    br.js("window.marker = 2; true")
    node = br.js("document.querySelector('#page-nodes [data-node]')"
                 ".dataset.node")
    r = subprocess.run([c.allot, "node", "drain", node, "--reason",
                        "fan swap <b>at noon</b>"], env=c.env,
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "drain: %s" % r.stderr)
    # Within 5 s, sooner than the page's poll (10 s): the node's event.
    br.until("document.querySelector('#page-nodes .why') && document"
             ".querySelector('#page-nodes .why').textContent.includes("
             "'Drained: fan swap <b>at noon</b>')", "the drain's reason, live",
             timeout=5)
    br.until("[...document.querySelectorAll('#events li[data-kind=node]')]"
             ".some(li => li.textContent.includes("
             "'drained: fan swap <b>at noon</b>'))", "the drain in the feed",
             timeout=5)
    check(br.js("window.marker") == 2 and
          not br.js("!!document.querySelector('#page-nodes .why b')"),
          "no reload, the reason shown as text")
    br.shot(os.path.join(shots, "nodes-drained.png"))
    c.cli("node", "resume", node)
    br.until("!document.querySelector('#page-nodes .why')",
             "the resume, live", timeout=5)
    br.js("location.hash = '#/queues'; true")
    br.until("document.querySelectorAll('#page-queues tr[data-queue]')"
             ".length >= 4", "the queues")
    br.shot(os.path.join(shots, "queues.png"))
    # Jobs: the demo's, each with its reason when it waits.
    br.js("location.hash = '#/jobs?state=all'; true")
    br.until("document.querySelectorAll('#page-jobs tr[data-job]')"
             ".length >= 5", "the demo's jobs")
    rows = br.js("[...document.querySelectorAll('#page-jobs tr[data-job]')]"
                 ".map(r => [r.dataset.job, r.className, "
                 "r.querySelector('.reason').textContent])")
    check(all(r[2] for r in rows if r[1] == "row-pending"),
          "pending jobs show why: %s" % rows)
    # The newest jobs (a cluster has more than a page of them).
    asked = br.js("performance.getEntriesByType('resource').map(e => e.name)"
                  ".filter(n => n.includes('/v1/jobs?'))")
    check(asked and all("order=desc" in u for u in asked),
          "the jobs page and the overview ask for the newest: %s" % asked)
    first = br.js("performance.getEntriesByType('resource').map(e => e.name)"
                  ".filter(n => n.includes('/v1/'))")
    check(any("/v1/summary" in u for u in first) and
          not any("state=active" in u for u in asked),
          "the overview counts the active jobs from /v1/summary: %s" % first)
    br.js("const s = document.querySelector('#f-search');"
          "s.value = 'joe'; s.dispatchEvent(new Event('input')); true")
    br.until("[...document.querySelectorAll('#page-jobs tr[data-job]')]"
             ".every(r => r.textContent.includes('joe'))", "the search")
    br.shot(os.path.join(shots, "jobs.png"))
    # A job's page: timeline, placement, the log's tail.
    jid = br.js("document.querySelector('#page-jobs tr[data-job] a')"
                ".textContent")
    br.js("document.querySelector('#page-jobs tr[data-job] a').click(); true")
    br.until("document.querySelector('#page-job') && "
             "document.querySelectorAll('.history li').length >= 2",
             "job %s's page" % jid)
    br.until("document.querySelector('#log').textContent.includes('%s on "
             "GPUs')" % jid, "the log's tail")
    check(br.js("document.querySelectorAll('.timeline .seg').length") >= 1,
          "a timeline")
    br.shot(os.path.join(shots, "job.png"))
    # A change made elsewhere shows without a reload.
    br.js("window.marker = 1; location.hash = '#/jobs'; true")
    br.until("document.querySelector('#page-jobs') && "
             "document.querySelectorAll('#page-jobs tr[data-job]').length",
             "the jobs page")
    r = subprocess.run([c.allot, "submit", "--gpus", "8", "--name", "big",
                        "--", "sleep", "600"], env=c.env,
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "submit: %s" % r.stderr)
    big = r.stdout.strip()
    t0 = time.monotonic()
    br.until("document.querySelector('#page-jobs tr[data-job=\"%s\"] "
             ".reason') && document.querySelector('#page-jobs "
             "tr[data-job=\"%s\"] .reason').textContent" % (big, big),
             "job %s and its reason, live" % big)
    live = time.monotonic() - t0
    check(br.js("window.marker") == 1, "no reload")
    # Hold and release from the page.
    row = "#page-jobs tr[data-job=\"%s\"]" % big
    br.js("document.querySelector('%s .act-hold').click(); true" % row)
    br.until("!!document.querySelector('%s.row-held .act-release')" % row,
             "job %s held" % big)
    br.js("document.querySelector('%s .act-release').click(); true" % row)
    br.until("!!document.querySelector('%s.row-pending .act-cancel')" % row,
             "job %s released" % big)
    # Cancel from the page: the row and the feed change live.
    t0 = time.monotonic()
    br.js("document.querySelector('#page-jobs tr[data-job=\"%s\"] "
          ".act-cancel').click(); true" % big)
    br.until("!document.querySelector('#page-jobs tr[data-job=\"%s\"]')"
             % big, "the cancelled job to leave the active list")
    br.until("[...document.querySelectorAll('#events li')].some(li => "
             "li.textContent.includes('job %s (big) cancelled'))" % big,
             "the cancel in the feed")
    cancel = time.monotonic() - t0
    s, j = c.api("GET", "/v1/jobs/" + big)
    check(j["state"] == "cancelled", "job %s: %s" % (big, j["state"]))
    print("live: a submit shown in %.2f s, a cancel in %.2f s" %
          (live, cancel))
    # The overview's ended jobs: the last 24 hours' (the report's).
    br.js("location.hash = '#/overview'; true")
    br.until("document.querySelector('[data-state=cancelled]') && "
             "Number(document.querySelector('[data-state=cancelled]')"
             ".textContent) >= 1", "the cancel counted on the overview")
    # Phone-sized: nothing scrolls sideways but the tables' own boxes.
    br.size(390, 844, mobile=True)
    for page, sel in (("overview", "#page-overview .kpi"),
                      ("jobs", "#page-jobs tr[data-job]"),
                      ("nodes", "#page-nodes .gpu")):
        br.js("location.hash = '#/%s'; true" % page)
        br.until("!!document.querySelector('%s')" % sel, "%s (phone)" % page)
        time.sleep(0.3)
        wide = br.js("document.documentElement.scrollWidth")
        check(wide <= 390, "%s at 390 px is %s px wide" % (page, wide))
        if page == "jobs":
            # Why a job waits, seen without scrolling the table.
            seen = br.js(
                "[...document.querySelectorAll('#page-jobs tr.row-pending')]"
                ".map(r => { const e = r.querySelector('.reason-m'); "
                "if (!e || !e.offsetParent) return null; "
                "const b = e.getBoundingClientRect(); "
                "return b.width > 0 && b.left >= 0 && b.right <= 390 ? "
                "e.textContent : null; })")
            check(seen and all(seen), "pending reasons on a phone: %s" % seen)
        br.shot(os.path.join(shots, "phone-%s.png" % page))
    br.size(1280, 800)
    # A user's token: their own jobs only; log out forgets it.
    joe = subprocess.run([c.allot, "token", "create", "--user", "joe"],
                         env=c.env, capture_output=True, text=True,
                         timeout=30).stdout.strip()
    br.js("document.querySelector('#logout').click(); true")
    br.until("!document.querySelector('#login').hidden", "logged out")
    check(br.js("sessionStorage.length") == 0, "log out forgets the token")
    br.js("document.querySelector('#token').value = %s;"
          "document.querySelector('#login').requestSubmit(); true"
          % json.dumps(joe))
    br.js("location.hash = '#/jobs?state=all'; true")
    br.until("document.querySelector('#who').textContent.startsWith('joe') "
             "&& document.querySelectorAll('#page-jobs tr[data-job]')"
             ".length", "joe's jobs")
    users = br.js("[...document.querySelectorAll('#page-jobs tr[data-job]')]"
                  ".map(r => r.children[2].textContent)")
    check(set(users) == {"joe"}, "joe sees his jobs only: %s" % users)
    br.until("document.querySelectorAll('#events li').length", "joe's feed")
    feed = br.js("[...document.querySelectorAll('#events li"
                 "[data-kind=job]')].map(li => li.textContent)")
    check(all("finetune" in f for f in feed), "joe's feed: %s" % feed)


def scenario_cluster_events(c):
    """Nodes' and queues' changes on GET /v1/events and in `allot events
    [-f]`: a node registered, drained with the admin's reason, resumed,
    lost when its agent stops reporting and ready when it reports again;
    a queue created, updated and deleted.  Every token sees them (a user's
    stream too); a stream of one job's events does not."""
    c.start_server("--node-timeout", "1500")
    bob = c.cli("token", "create", "--user", "bob").stdout.strip()
    admin_stream = Stream(c, "", c.admin)
    bob_stream = Stream(c, "", bob)
    follower = subprocess.Popen(
        [c.allot, "events", "-f", "-n", "0", "--json"], env=c.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    c.procs.append(follower)
    time.sleep(0.5)  # the streams are open before anything happens
    c.start_agent("n1", "2xH100-80GB")
    c.cli("queue", "set", "research", "--deserved", "gpu=1")
    c.cli("queue", "set", "research", "--deserved", "gpu=2")
    c.cli("node", "drain", "n1", "--reason", "fan swap at noon")
    c.cli("node", "resume", "n1")
    c.cli("queue", "delete", "research")
    # The agent stops (SIGSTOP): the node is lost; it goes on: ready.
    agent = c.agents["n1"]
    agent.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: any(n["state"] == "down" for n in
                             c.api("GET", "/v1/nodes")[1]["nodes"]),
                 15, "n1 down")
    finally:
        agent.send_signal(signal.SIGCONT)
    wait_for(lambda: any(n["state"] == "ready" for n in
                         c.api("GET", "/v1/nodes")[1]["nodes"]),
             15, "n1 ready again")
    want = [("node", "registered"), ("queue", "created"),
            ("queue", "updated"), ("node", "drained"), ("node", "resumed"),
            ("queue", "deleted"), ("node", "lost"), ("node", "ready")]

    def cluster(stream):
        got = [(ev, d) for ev, d, _ in sse_parse(stream.text()[1])
               if ev in ("node", "queue")]
        return got if len(got) >= len(want) else None
    got = wait_for(lambda: cluster(admin_stream), 15,
                   "the nodes' and queues' events on a stream")
    check([(ev, d["event"]) for ev, d in got] == want,
          "the events, in order: %s" % got)
    by = {(ev, d["event"]): d for ev, d in got}
    check(all(d.get("node") == "n1" for ev, d in got if ev == "node") and
          all(d.get("queue") == "research" for ev, d in got
              if ev == "queue") and
          all("job" not in d for ev, d in got),
          "each names its node or queue, no job: %s" % got)
    check(by[("node", "drained")]["detail"] == "fan swap at noon" and
          by[("node", "drained")]["state"] == "draining",
          "the drain's reason: %s" % by[("node", "drained")])
    check(by[("node", "registered")]["detail"] == "2 GPUs (emulated)" and
          by[("node", "registered")]["state"] == "ready" and
          by[("node", "lost")]["state"] == "down" and
          by[("node", "ready")]["state"] == "ready",
          "registered, lost, ready: %s" % got)
    ids = [d["id"] for ev, d in got]
    check(ids == sorted(set(ids)), "ids grow, once each: %s" % ids)
    # A user's stream has them too.
    bgot = wait_for(lambda: cluster(bob_stream), 10, "bob's stream")
    check([d["id"] for ev, d in bgot] == ids, "bob sees them: %s" % bgot)
    # `allot events -f --json`: the same, live.
    box = []

    def followed():
        lines = []
        for ln in follower.stdout:
            lines.append(json.loads(ln))
            if len(lines) >= len(ids):
                return lines
        return lines
    t = threading.Thread(target=lambda: box.append(followed()), daemon=True)
    t.start()
    t.join(20)
    check(box and [e["id"] for e in box[0]] == ids,
          "allot events -f printed them: %s" % (box or "nothing"))
    follower.send_signal(signal.SIGTERM)
    follower.wait(10)
    # `allot events`: a line each, the node's or queue's name in place
    # of a job's id and owner.
    out = c.cli("events", "-n", "20").stdout
    lines = [ln.split(None, 2)[2] for ln in out.splitlines()]
    check(any(ln.split()[:4] == ["node", "n1", "drained", "fan"]
              for ln in lines) and
          any(ln.split()[:3] == ["queue", "research", "created"]
              for ln in lines) and
          any(ln.split()[:3] == ["node", "n1", "lost"] for ln in lines),
          "allot events:\n%s" % out)
    # One job's stream has none of them.
    c.cli("queue", "set", "research", "--deserved", "gpu=1")
    jid = c.submit("--queue", "research", "--", "true")
    c.wait_state(jid, "completed")
    one = events(c, "follow=false&job=%d" % jid)
    check(one and all(ev in ("ready", "job") for ev, d, _ in one),
          "a job's stream: %s" % one)
    # GET /v1/nodes: what runs on each GPU (the list reads the running
    # tasks once for all nodes), named to admins and the job's owner.
    run = c.submit("--queue", "research", "--gpus", "1", "--", "sleep", "60")
    c.wait_state(run, "running")
    n1 = c.api("GET", "/v1/nodes")[1]["nodes"][0]
    check(n1["gpus_used"] == 1 and
          [g.get("job") for g in n1["gpus"] if g.get("busy")] == [run],
          "the running job on n1's GPUs: %s" % n1)
    nb = c.api("GET", "/v1/nodes", token=bob)[1]["nodes"][0]
    check(nb["gpus_used"] == 1 and
          not any("job" in g for g in nb["gpus"]),
          "another's job is not named to bob: %s" % nb)
    c.cli("cancel", str(run))
    admin_stream.close()
    bob_stream.close()


SCENARIOS = {
    "cluster_events": scenario_cluster_events,
    "events": scenario_events,
    "dashboard": scenario_dashboard,
}

if __name__ == "__main__":
    e2e.SCENARIOS = SCENARIOS
    sys.exit(e2e.main())
