#!/usr/bin/env python3
"""End-to-end tests of production hardening: the API over TLS (a private CA
and a server certificate made here with openssl), the CLI and the agent
verifying it, and what a client maps for it.  The harness is e2e.py's
(real server, agents with emulated GPUs, the CLI).

Usage: e2e_harden.py SCENARIO PATH/TO/allot
"""
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
import e2e_cli  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   capture_output=True)


def make_ca(d, name):
    """A private CA in d: NAME.pem and NAME.key."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
            "-out", name + ".pem", "-days", "2", "-subj",
            "/CN=allot test " + name, cwd=d)
    return os.path.join(d, name + ".pem")


def make_cert(d, ca, name, sans):
    """A server certificate NAME.pem/NAME.key signed by CA for sans
    (openssl's subjectAltName syntax)."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=" + name, cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n" % sans)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
            "-CAkey", ca + ".key", "-CAcreateserial", "-out", name + ".pem",
            "-days", "2", "-extfile", name + ".ext", cwd=d)
    return os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")


def trust_in_tests(cafile):
    """The harness's own API calls (urllib) trust cafile."""
    ssl._create_default_https_context = \
        lambda: ssl.create_default_context(cafile=cafile)


def scenario_tls(c):
    """`allot server --tls-cert/--tls-key` serves HTTPS; an agent given
    --ca registers and runs a job submitted by the CLI, which trusts the CA
    through ALLOT_CA, `allot --ca FILE` or `ca = FILE` in its config; a
    client without the CA, with another CA, or with a certificate for
    another name is refused with a clear error and exit 1; plain HTTP to
    the TLS port says what is wrong."""
    d = os.path.join(c.root, "pki")
    os.mkdir(d)
    ca = make_ca(d, "ca")
    other = make_ca(d, "other")
    cert, key = make_cert(d, "ca", "server",
                          "DNS:localhost,IP:127.0.0.1,IP:::1")
    wrong_cert, wrong_key = make_cert(d, "ca", "elsewhere",
                                      "DNS:elsewhere.example")
    trust_in_tests(ca)
    c.start_server("--tls-cert", cert, "--tls-key", key)
    check(c.url.startswith("https://127.0.0.1:"),
          "STATE/url is https: %s" % c.url)
    c.start_agent("n1", "2xH100-80GB", extra=("--ca", ca, "--log-level", "debug"))
    # The CLI: ALLOT_CA.
    c.env["ALLOT_CA"] = ca
    jid = c.submit("--gpus", "1", "--", "sh", "-c", "echo over-tls")
    c.wait_state(jid, "completed")
    check("over-tls" in c.cli("logs", str(jid)).stdout, "the job's log")
    # `allot --ca FILE COMMAND`.
    del c.env["ALLOT_CA"]
    p = c.cli("--ca", ca, "show", str(jid))
    check("completed" in p.stdout, "allot --ca FILE show: %s" % p.stdout)
    # No CA: the system's store does not know ours.
    p = c.cli("ls", ok=False)
    check(p.returncode == 1 and "certificate is refused for 127.0.0.1" in
          p.stderr and "issuer is unknown" in p.stderr and "--ca FILE" in
          p.stderr, "without the CA: exit 1, a clear error: %d %r" %
          (p.returncode, p.stderr))
    print("  no CA: %s" % p.stderr.strip())
    # Another CA.
    p = c.cli("--ca", other, "ls", ok=False)
    check(p.returncode == 1 and "certificate is refused" in p.stderr,
          "another CA: exit 1: %d %r" % (p.returncode, p.stderr))
    # A CA file that is not one.
    junk = os.path.join(d, "junk.pem")
    with open(junk, "w") as f:
        f.write("not a certificate\n")
    p = c.cli("--ca", junk, "ls", ok=False)
    check(p.returncode == 1 and "cannot read CA certificates from" in
          p.stderr, "a junk CA file: %d %r" % (p.returncode, p.stderr))
    # The config file's `ca = FILE`.
    cfg = os.path.join(c.root, ".config", "allot")
    os.makedirs(cfg, exist_ok=True)
    with open(os.path.join(cfg, "config"), "w") as f:
        f.write("ca = %s\n" % ca)
    p = c.cli("show", str(jid))
    check("completed" in p.stdout, "ca = FILE in the config: %s" % p.stdout)
    # By name: localhost is in the certificate too.
    port = c.url.rsplit(":", 1)[1]
    p = c.cli("show", str(jid), "--server", "https://localhost:" + port)
    check("completed" in p.stdout, "https://localhost: %s" % p.stdout)
    # IPv6 loopback: the listener is IPv4, so refused, but the URL parses.
    p = c.cli("ls", "--server", "https://[::1]:" + port, ok=False)
    check(p.returncode == 1 and "cannot reach the server at "
          "https://[::1]" in p.stderr, "an IPv6 URL: %r" % p.stderr)
    # Plain HTTP to the TLS port.
    p = c.cli("ls", "--server", "http://127.0.0.1:" + port, ok=False)
    check(p.returncode == 1 and "an https server?" in p.stderr,
          "http:// to the https port: %r" % p.stderr)
    # An agent that does not trust the CA never registers, and says why.
    c.spawn("agent-n2", [
        "agent", "--server", c.url, "--join-token", c.join, "--name", "n2",
        "--addr", "127.0.0.1", "--state", os.path.join(c.root, "agent-n2"),
        "--fake-gpus", "1xH100-80GB", "--no-run-as-user"])
    log = os.path.join(c.root, "agent-n2.log")
    wait_for(lambda: "certificate is refused" in open(log).read(), 10,
             "agent n2 to log the refused certificate")
    check(all(n["name"] != "n2" for n in c.api("GET", "/v1/nodes")[1]
              ["nodes"]), "n2 never registered")
    # The server restarted with a certificate for another name: the CLI
    # refuses it, naming the host it asked for.
    c.kill_server()
    urlfile = os.path.join(c.state, "url")
    os.unlink(urlfile)
    c.server = c.spawn("server2", [
        "server", "--listen", "127.0.0.1:%d" % c.port, "--state", c.state,
        "--tls-cert", wrong_cert, "--tls-key", wrong_key])
    wait_for(lambda: os.path.exists(urlfile), 10, "STATE/url")
    p = c.cli("--ca", ca, "ls", ok=False)
    check(p.returncode == 1 and "certificate is refused for 127.0.0.1" in
          p.stderr and "does not match" in p.stderr,
          "a certificate for another name: %r" % p.stderr)
    print("  another name: %s" % p.stderr.strip())


def scenario_tls_self_signed(c):
    """`allot server --tls-self-signed DIR` makes a private CA and a server
    certificate on first start (keys 0600) for localhost, 127.0.0.1 and
    this host's name; Python's own TLS (OpenSSL), the CLI and an agent
    given DIR/ca.pem trust it; a restart keeps the same CA; with
    --tls-cert as well it is a usage error."""
    d = os.path.join(c.root, "tls")
    ca = os.path.join(d, "ca.pem")
    # The harness's urllib verifies with OpenSSL, against the CA the
    # server is about to make (read at each connection).
    trust_in_tests(ca)
    c.start_server("--tls-self-signed", d)
    for leaf, mode in (("ca.pem", 0o644), ("server.pem", 0o644),
                       ("ca.key", 0o600), ("server.key", 0o600)):
        st = os.stat(os.path.join(d, leaf))
        check(st.st_mode & 0o777 == mode, "%s mode %o" % (leaf, st.st_mode))
    check(c.url.startswith("https://"), "https: %s" % c.url)
    check(c.healthz() is not None, "Python's TLS trusts the made CA")
    c.env["ALLOT_CA"] = ca
    c.start_agent("n1", "1xH100-80GB", extra=("--ca", ca))
    jid = c.submit("--", "true")
    c.wait_state(jid, "completed")
    port = c.url.rsplit(":", 1)[1]
    for host in ("localhost", socket.gethostname()):
        p = c.cli("ls", "--all", "--server", "https://%s:%s" % (host, port))
        check(str(jid) in p.stdout, "by the name %s" % host)
    before = open(ca).read()
    c.kill_server(signal.SIGTERM)
    c.start_server("--tls-self-signed", d)
    check(open(ca).read() == before, "a restart keeps the CA")
    check(str(jid) in c.cli("ls", "--all").stdout, "trusted after restart")
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "x"), "--tls-self-signed", d,
                        "--tls-cert", os.path.join(d, "server.pem"))
    check(rc == 2 and "not both" in err, "both: %d %r" % (rc, err))


def scenario_tls_errors(c):
    """The server refuses a half or unreadable TLS setup at start (exit 1,
    a message); a listener off the loopback without TLS warns that tokens
    travel in the clear."""
    d = os.path.join(c.root, "pki")
    os.mkdir(d)
    make_ca(d, "ca")
    cert, key = make_cert(d, "ca", "server", "IP:127.0.0.1")
    st = os.path.join(c.root, "s")
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state", st,
                        "--tls-cert", cert)
    check(rc == 1 and "--tls-cert and --tls-key go together" in err,
          "only --tls-cert: %d %r" % (rc, err))
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state", st,
                        "--tls-cert", cert, "--tls-key",
                        os.path.join(d, "missing.key"))
    check(rc == 1 and "cannot read" in err and "missing.key" in err,
          "a missing key: %d %r" % (rc, err))
    # A key that is not the certificate's.
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state", st,
                        "--tls-cert", cert, "--tls-key",
                        os.path.join(d, "ca.key"))
    check(rc == 1 and "do not load or match" in err,
          "a key of another certificate: %d %r" % (rc, err))
    # Off the loopback in the clear: a warning.
    p = c.spawn("server-any", ["server", "--listen", "0.0.0.0:0", "--state",
                               os.path.join(c.root, "any")])
    log = os.path.join(c.root, "server-any.log")
    wait_for(lambda: "travel in the clear" in open(log).read(), 10,
             "the warning about tokens in the clear")
    p.terminate()
    p.wait(10)
    # On the loopback: none.
    c.start_server()
    check("travel in the clear" not in
          open(os.path.join(c.root, "server.log")).read(),
          "no warning on the loopback")


def scenario_tls_client_libs(c):
    """The allot command maps GnuTLS only when it talks https: caught while
    it waits on a peer that never answers, `allot ls` on an http URL maps
    only a client's libraries, on an https URL GnuTLS too."""
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(16)
    port = lsn.getsockname()[1]
    held = []
    for scheme, want in (("http", False), ("https", True)):
        env = dict(c.env, ALLOT_SERVER="%s://127.0.0.1:%d" % (scheme, port),
                   ALLOT_TOKEN="al_none")
        p = subprocess.Popen([c.allot, "ls"], env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            conn, _ = lsn.accept()
            held.append(conn)
            if want:  # the ClientHello comes after the library is loaded
                conn.settimeout(10)
                check(len(conn.recv(5)) > 0, "a TLS ClientHello")
            libs = e2e_cli.mapped_libs(p.pid)
        finally:
            p.kill()
            p.wait(10)
        gnutls = [lib for lib in libs if lib.startswith("libgnutls.so")]
        check(bool(gnutls) == want, "%s: GnuTLS mapped %s: %s" %
              (scheme, "as it should be" if want else "though not needed",
               sorted(libs)))
        if not want:
            check(not e2e_cli.foreign(libs), "http: only a client's "
                  "libraries: %s" % e2e_cli.foreign(libs))
        print("  allot ls on %s maps %d shared objects" % (scheme, len(libs)))
    for conn in held:
        conn.close()
    lsn.close()


def active_of(urls):
    """The index of the controller of urls that answers, or None."""
    for i, u in enumerate(urls):
        try:
            with urllib.request.urlopen(u + "/v1/healthz", timeout=2) as r:
                if r.status == 200:
                    return i
        except OSError:
            pass
    return None


def join_active(c, urls, dirs, timeout):
    """Waits for one of the controllers of urls (state directories dirs) to
    be active, and points the cluster c's clients at all of them with its
    tokens; returns its index."""
    first = wait_for(lambda: (lambda a: None if a is None else (a,))(
        active_of(urls)), timeout, "an active controller")[0]
    tok = os.path.join(dirs[first], "admin-token")
    wait_for(lambda: os.path.exists(tok), 10, "the admin token")
    c.admin = open(tok).read().strip()
    c.join = open(os.path.join(dirs[first], "join-token")).read().strip()
    c.env["ALLOT_TOKEN"] = c.admin
    c.env["ALLOT_SERVER"] = ",".join(urls)
    c.url = urls[first]
    return first


def post_any(urls, token, body):
    """POSTs a job to the first controller of urls that takes it: one that
    cannot be connected to or answers 503 is passed over.  The id, or None
    when no answer says (a connection cut after the request went may or
    may not have stored it)."""
    for u in urls:
        req = urllib.request.Request(u + "/v1/jobs",
                                     data=json.dumps(body).encode(),
                                     method="POST")
        req.add_header("Authorization", "Bearer " + token)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())["id"]
        except urllib.error.HTTPError as e:
            if e.code == 503:
                continue
            return None
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                continue
            return None
        except OSError:
            return None
    return None


def scenario_pg_failover(c):
    """Three controllers on one PostgreSQL database (one active, two
    --standby), four agents and the CLI given all three; while clients
    submit, the active is killed (kill -9) twenty times in a row, each
    time restarted as a standby: a standby takes over each time (the time
    to the first answer is measured), every accepted job exists and runs
    exactly once, and so does every other job stored."""
    rc, err = c.refused("server", "--listen", "127.0.0.1:0", "--state",
                        os.path.join(c.root, "lite"), "--standby")
    check(rc == 2 and "--standby needs --store postgresql://" in err,
          "--standby on SQLite: %d %r" % (rc, err))
    c.store = ["--store", c.pg.uri]
    ports = [e2e.free_port() for _ in range(3)]
    urls = ["http://127.0.0.1:%d" % p for p in ports]
    dirs = [os.path.join(c.root, "ctl%d" % i) for i in range(3)]
    procs = [None] * 3

    def start(i):
        procs[i] = c.spawn("ctl%d" % i, [
            "server", "--listen", "127.0.0.1:%d" % ports[i], "--state",
            dirs[i], "--standby", "--grace", "2000"] + c.store)

    def active():
        return active_of(urls)

    for i in range(3):
        start(i)
    first = join_active(c, urls, dirs, 10)
    for k in range(4):
        name = "n%d" % k
        c.spawn("agent-" + name, [
            "agent", "--server", ",".join(urls), "--join-token", c.join,
            "--name", name, "--addr", "127.0.0.1", "--state",
            os.path.join(c.root, "agent-" + name), "--fake-gpus",
            "4xH100-80GB", "--no-run-as-user"])
    wait_for(lambda: len([n for n in c.api("GET", "/v1/nodes")[1]["nodes"]
                          if n["state"] == "ready"]) == 4, 15,
             "four agents to register")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    body = {"command": ["sh", "-c", "echo x >> %s/$ALLOT_JOB_ID; sleep 0.3"
                        % marks], "gpus": 1}
    accepted, lock = [], threading.Lock()
    stop = threading.Event()

    def api_submitter():
        while not stop.is_set():
            jid = post_any(urls, c.admin, body)
            if jid is not None:
                with lock:
                    accepted.append(jid)
            else:
                time.sleep(0.05)

    def cli_submitter():
        while not stop.is_set():
            p = c.cli("submit", "--gpus", "1", "--", "sh", "-c",
                      "echo x >> %s/$ALLOT_JOB_ID; sleep 0.3" % marks,
                      ok=False)
            if p.returncode == 0:
                with lock:
                    accepted.append(int(p.stdout.strip()))
            else:
                time.sleep(0.05)

    threads = [threading.Thread(target=f) for f in
               (api_submitter, api_submitter, cli_submitter)]
    for t in threads:
        t.start()
    takeovers = []
    try:
        for rnd in range(20):
            n = len(accepted)
            wait_for(lambda: len(accepted) >= n + 5, 30,
                     "5 more accepted submissions (round %d)" % rnd)
            cur = active()
            check(cur is not None, "an active controller (round %d)" % rnd)
            t0 = time.monotonic()
            procs[cur].kill()
            procs[cur].wait(10)
            new = wait_for(lambda: (lambda a: (a,) if a is not None and
                                    a != cur else None)(active()),
                           15, "a standby to take over (round %d)" % rnd)[0]
            takeovers.append(time.monotonic() - t0)
            c.url = urls[new]
            start(cur)  # back, as a standby
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    check(max(takeovers) <= 5, "every takeover within 5 s: %s" %
          ["%.2f" % t for t in takeovers])
    ids, after = set(), 0
    while after is not None:
        s, b = c.api("GET", "/v1/jobs?limit=1000&after=%d" % after)
        check(s == 200, "GET /v1/jobs: %s %s" % (s, b))
        ids |= {j["id"] for j in b["jobs"]}
        after = b["next"]
    missing = [i for i in accepted if i not in ids]
    check(not missing, "accepted jobs lost: %s" % missing[:10])
    for i in sorted(ids):
        c.wait_state(i, ("completed",), timeout=60)
    twice = []
    for i in sorted(ids):
        f = os.path.join(marks, str(i))
        runs = open(f).read().count("x") if os.path.exists(f) else 0
        if runs != 1:
            twice.append((i, runs))
    check(not twice, "jobs that did not run exactly once: %s" % twice[:10])
    takeovers.sort()
    print("  %d jobs accepted (%d stored) over 20 kill -9s of the active "
          "controller; each ran once; takeover s: median %.2f, max %.2f" %
          (len(accepted), len(ids), takeovers[len(takeovers) // 2],
           takeovers[-1]))


class Netns:
    """Network namespaces joined to this one by veth pairs on a private
    subnet: namespace k has 10.X.k.2, this side 10.X.k.1, and a default
    route through it (so it reaches this side's other addresses too).
    cut(k) takes namespace k's link down, heal(k) brings it back."""

    def __init__(self, n):
        tag = os.getpid() % 100000
        self.net = "10.%d" % (100 + os.getpid() % 150)
        self.names = ["allot-p%d-%d" % (tag, k) for k in range(1, n + 1)]
        self.links = []
        for k, ns in enumerate(self.names, 1):
            here, there = "alp%dh%d" % (tag, k), "alp%dn%d" % (tag, k)
            self.links.append(there)
            self.ip("netns", "add", ns)
            self.ip("link", "add", here, "type", "veth", "peer", "name", there)
            self.ip("link", "set", there, "netns", ns)
            self.ip("addr", "add", self.addr(k, 1) + "/24", "dev", here)
            self.ip("link", "set", here, "up")
            self.ip("netns", "exec", ns, "ip", "addr", "add",
                    self.addr(k, 2) + "/24", "dev", there)
            self.ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            self.heal(k)

    def addr(self, k, host):
        return "%s.%d.%d" % (self.net, k, host)

    @staticmethod
    def ip(*args):
        p = subprocess.run(["ip"] + list(args), capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise e2e.Fail("ip %s: %s" % (" ".join(args), p.stderr.strip()))

    def cut(self, k):
        self.ip("netns", "exec", self.names[k - 1], "ip", "link", "set",
                self.links[k - 1], "down")

    def heal(self, k):
        ns = self.names[k - 1]
        self.ip("netns", "exec", ns, "ip", "link", "set", self.links[k - 1],
                "up")
        self.ip("netns", "exec", ns, "ip", "route", "replace", "default",
                "via", self.addr(k, 1))

    def close(self):
        for ns in self.names:  # deleting a namespace deletes its veth pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def runs_of(marks, jid):
    """The runs of job jid the job script recorded: (restart, node, start,
    end or None) each."""
    out = []
    for f in sorted(os.listdir(marks)):
        job, restart, node = f.split(".", 2)
        if int(job) != jid:
            continue
        words = open(os.path.join(marks, f)).read().split()
        start = float(words[1]) if len(words) >= 2 else None
        end = float(words[3]) if len(words) >= 4 else None
        out.append((int(restart), node, start, end))
    return out


def scenario_partition(c):
    """Agents in network namespaces of their own; a node running a job is
    cut off (its link down) without stopping a process.  Its agent, with
    --fence-timeout 2000 below the controller's --node-timeout 6000 less
    the 1 s grace, stops the task itself; the controller marks the node
    down and requeues the job onto another node; the link back, the node
    rejoins and the job runs on where it was requeued.  Every run's start
    and end, written by the job itself: no job ran in two places at once
    (zero double runs)."""
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    try:
        net = Netns(2)
    except e2e.Fail as e:
        print("skipped: no network namespaces here: %s" % e)
        sys.exit(77)
    try:
        partition(c, net)
    finally:
        net.close()


def partition(c, net):
    c.start_server("--listen", net.addr(1, 1) + ":0", "--grace", "1000",
                   "--node-timeout", "6000")
    fence = ["--fence-timeout", "2000", "--log-level", "debug"]
    for k in (1, 2):
        name = "n%d" % k
        log = open(os.path.join(c.root, "agent-%s.log" % name), "ab")
        p = subprocess.Popen(
            ["ip", "netns", "exec", net.names[k - 1], c.allot, "agent",
             "--server", c.url, "--join-token", c.join, "--name", name,
             "--addr", net.addr(k, 2), "--state",
             os.path.join(c.root, "agent-" + name), "--fake-gpus",
             "2xH100-80GB", "--no-run-as-user"] + fence,
            stdout=log, stderr=subprocess.STDOUT, env=c.env,
            start_new_session=True)
        log.close()
        c.procs.append(p)
        c.agents[name] = p
    c.start_agent("n3", "2xH100-80GB", extra=fence)
    wait_for(lambda: len([n for n in c.api("GET", "/v1/nodes")[1]["nodes"]
                          if n["state"] == "ready"]) == 3, 15,
             "three agents to register")
    marks = os.path.join(c.root, "marks")
    os.mkdir(marks)
    script = ("f=%s/$ALLOT_JOB_ID.$ALLOT_RESTART_COUNT.$ALLOT_NODE; "
              "echo S $(date +%%s.%%N) > $f; "
              "trap 'echo E $(date +%%s.%%N) >> $f; exit 143' TERM; "
              "sleep 300 & wait" % marks)
    jobs = [c.submit("--gpus", "2", "--", "sh", "-c", script)
            for _ in range(2)]
    for j in jobs:
        c.wait_state(j, "running")
        wait_for(lambda: runs_of(marks, j), 10, "job %d's first run" % j)
    where = {j: c.job(j)["placement"][0]["node"] for j in jobs}
    victim = [j for j in jobs if where[j] in ("n1", "n2")][0]
    node = where[victim]
    k = int(node[1])
    t_cut = time.time()
    net.cut(k)
    alog = os.path.join(c.root, "agent-%s.log" % node)
    wait_for(lambda: "fence: no answer from the controller" in
             open(alog).read(), 10, "%s to fence itself" % node)
    wait_for(lambda: any(n["name"] == node and n["state"] == "down"
                         for n in c.api("GET", "/v1/nodes")[1]["nodes"]),
             15, "%s to be marked down" % node)
    wait_for(lambda: c.job(victim)["restart_count"] == 1 and
             c.job(victim)["state"] == "running", 15,
             "job %d requeued and running again" % victim)
    new_node = c.job(victim)["placement"][0]["node"]
    check(new_node != node, "requeued elsewhere than %s" % node)
    wait_for(lambda: len(runs_of(marks, victim)) == 2, 10,
             "the second run's start")
    time.sleep(1)
    net.heal(k)
    wait_for(lambda: any(n["name"] == node and n["state"] == "ready"
                         for n in c.api("GET", "/v1/nodes")[1]["nodes"]),
             20, "%s to rejoin" % node)
    time.sleep(2)  # a sync or two after the return
    for j in jobs:
        check(c.job(j)["state"] == "running", "job %d runs on" % j)
    # Zero double runs: a job's runs never overlap in time, and only the
    # last is still running.
    double = 0
    for j in jobs:
        runs = sorted(runs_of(marks, j), key=lambda r: r[2])
        for a, b in zip(runs, runs[1:]):
            if a[3] is None or a[3] > b[2]:
                double += 1
        check(all(r[3] is not None for r in runs[:-1]) and
              runs[-1][3] is None, "job %d: every run but the last ended: "
              "%s" % (j, runs))
    check(double == 0, "double runs: %d (%s)" % (
        double, {j: runs_of(marks, j) for j in jobs}))
    first, second = sorted(runs_of(marks, victim), key=lambda r: r[2])
    print("  %s cut off: its run stopped %.1f s after the cut, the job "
          "restarted on %s %.1f s after the cut; double runs: 0" %
          (node, first[3] - t_cut, new_node, second[2] - t_cut))
    for j in jobs:
        c.cli("cancel", str(j))


def read_lines(f, n, timeout):
    """Up to n lines from the pipe f, for at most timeout seconds."""
    import select
    lines, buf, end = [], b"", time.monotonic() + timeout
    while len(lines) < n and time.monotonic() < end:
        if not select.select([f], [], [], 0.5)[0]:
            continue
        chunk = os.read(f.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and len(lines) < n:
            line, buf = buf.split(b"\n", 1)
            lines.append(line.decode() + "\n")
    return lines


def scenario_demo_twice(c):
    """`allot dev --demo` twice in a row on the same state (the README's
    `scripts/dev` run again): the second run sets its queues again rather
    than failing on them, cancels the first run's jobs, and tells its
    story again: joe's job runs by reclaiming one of susan's."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)

    def jobs():
        r = subprocess.run([c.allot, "ls", "--all", "--json"], env=env,
                           capture_output=True, text=True, timeout=30)
        return json.loads(r.stdout) if r.returncode == 0 else []

    def active():
        return [j for j in jobs() if j["state"] in ("pending", "running")]

    def reclaimed():
        js = active()
        joe = [j for j in js if j["user"] == "joe"]
        susan = [j for j in js if j["user"] == "susan"]
        return (len(joe) == 1 and joe[0]["state"] == "running" and
                sum(j["restart_count"] for j in susan) == 1 and
                all(j["state"] == "running" for j in js
                    if j["user"] == "jemma"))

    first = set()
    for run in (1, 2):
        log = open(os.path.join(c.root, "dev%d.log" % run), "wb")
        p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                              "--demo"], stdout=subprocess.PIPE, stderr=log,
                             env=env, start_new_session=True)
        c.procs.append(p)
        lines = read_lines(p.stdout, 7, 30)
        check(len(lines) == 7 and lines[-1].startswith("demo: joe submitted"),
              "run %d: the demo's story: %r (stderr: %r)" %
              (run, lines, open(os.path.join(c.root, "dev%d.log" % run))
               .read()))
        wait_for(reclaimed, 20, "run %d: joe's job to run by reclaim" % run)
        ids = {j["id"] for j in active()}
        check(not ids & first, "run %d: the first run's jobs are not active:"
              " %s" % (run, ids & first))
        first = ids
        p.send_signal(signal.SIGTERM)
        check(p.wait(15) == 0, "run %d: dev exits cleanly" % run)


def children(pid):
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            out += [int(x) for x in f.read().split()]
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def scenario_dev_kill9(c):
    """kill -9 of `allot dev`: its agent goes too (its task lives on); the
    next `allot dev` on the same state gets an agent of its own, which
    adopts the task (the same run goes on); a clean stop of that one
    leaves neither its controller nor its agent behind."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)

    def dev(run):
        log = open(os.path.join(c.root, "dev%d.log" % run), "wb")
        p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=log, env=env,
                             start_new_session=True)
        c.procs.append(p)
        lines = read_lines(p.stdout, 1, 30)
        check(lines and lines[0].startswith("allot dev: ready"),
              "run %d: ready: %r" % (run, lines))
        agents = children(p.pid)
        check(len(agents) == 1, "run %d: one agent: %s" % (run, agents))
        return p, agents[0]

    def allot(*args):
        r = subprocess.run([c.allot] + list(args), env=env,
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "allot %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    p, agent = dev(1)
    jid = int(allot("submit", "--", "sh", "-c",
                    "echo run $ALLOT_RESTART_COUNT; sleep 300").strip())
    wait_for(lambda: "run 0" in allot("logs", str(jid)), 15,
             "the job to run")
    p.kill()
    p.wait(10)
    wait_for(lambda: not alive(agent), 10,
             "the agent to go with the killed allot dev")
    p, agent = dev(2)
    wait_for(lambda: json.loads(allot("show", "--json", str(jid)))
             ["state"] == "running", 15, "the job running under run 2")
    show = json.loads(allot("show", "--json", str(jid)))
    check(show["restart_count"] == 0, "the same run goes on (adopted): %s"
          % show["restart_count"])
    log2 = open(os.path.join(c.root, "dev2.log")).read()
    check("lock" not in log2 and "refused" not in log2,
          "run 2's agent is not refused: %r" % log2[-500:])
    allot("cancel", str(jid))
    p.send_signal(signal.SIGTERM)
    check(p.wait(15) == 0, "run 2 exits cleanly")
    wait_for(lambda: not alive(agent), 10, "run 2's agent to be gone")


SCENARIOS = {
    "tls": scenario_tls,
    "tls_errors": scenario_tls_errors,
    "tls_self_signed": scenario_tls_self_signed,
    "tls_client_libs": scenario_tls_client_libs,
    "pg_failover": scenario_pg_failover,
    "partition": scenario_partition,
    "demo_twice": scenario_demo_twice,
    "dev_kill9": scenario_dev_kill9,
}

if __name__ == "__main__":
    e2e.SCENARIOS = SCENARIOS
    sys.exit(e2e.main())
