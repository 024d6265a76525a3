#!/usr/bin/env python3
"""End-to-end tests of interactive sessions: `allot run`, `attach`,
`exec` and `port-forward`, driven as a user drives them, through a real
pseudo-terminal the test opens, against a real server and agent on
loopback (e2e.py's Cluster).

Usage: session.py SCENARIO PATH/TO/allot
"""
import fcntl
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import Fail, check, wait_for  # noqa: E402


class Term:
    """`allot ARGS` on a pseudo-terminal of its own (its controlling
    terminal, as a shell's would be): keys are written to the master, what
    it shows is read from it."""

    def __init__(self, c, args, rows=24, cols=80):
        self.master, slave = os.openpty()
        self.resize(rows, cols)
        env = dict(c.env, TERM="xterm")

        def ctty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.p = subprocess.Popen([c.allot] + list(args), stdin=slave,
                                  stdout=slave, stderr=slave, env=env,
                                  cwd=c.root, preexec_fn=ctty)
        os.close(slave)
        self.out = b""

    def resize(self, rows, cols):
        fcntl.ioctl(self.master, termios.TIOCSWINSZ,
                    struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, text):
        os.write(self.master, text.encode() if isinstance(text, str)
                 else text)

    def read_some(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return None  # the process is gone and its output read
        if not data:
            return None
        self.out += data
        return True

    def expect(self, pattern, timeout=20):
        """Waits until what the terminal showed since the last expect
        matches pattern (a regex); returns the match."""
        end = time.monotonic() + timeout
        rx = re.compile(pattern.encode() if isinstance(pattern, str)
                        else pattern)
        while True:
            m = rx.search(self.out)
            if m:
                self.out = self.out[m.end():]
                return m
            left = end - time.monotonic()
            if left <= 0 or self.read_some(min(left, 0.5)) is None:
                m = rx.search(self.out)
                if m:
                    self.out = self.out[m.end():]
                    return m
                raise Fail("terminal: no %r in %r" % (pattern,
                                                      self.out[-600:]))

    def wait(self, timeout=20):
        end = time.monotonic() + timeout
        while self.p.poll() is None and time.monotonic() < end:
            self.read_some(0.1)
        while self.read_some(0.05):
            pass
        if self.p.poll() is None:
            raise Fail("allot %s did not exit; it showed %r" %
                       (" ".join(self.p.args[1:3]), self.out[-600:]))
        return self.p.returncode

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        os.close(self.master)


def job_of_session(c, before):
    """The id of the job `allot run` submitted (the first after before)."""
    def newest():
        jobs = c.api("GET", "/v1/jobs")[1]["jobs"]
        ids = [j["id"] for j in jobs if j["id"] > before]
        return max(ids) if ids else None
    return wait_for(newest, 20, "the session's job")


def last_job(c):
    jobs = c.api("GET", "/v1/jobs")[1]["jobs"]
    return max([j["id"] for j in jobs] or [0])


def start(c):
    """A server, one agent with 8 emulated GPUs, and a queue `dev` whose
    deserved quota lets build jobs (which never borrow) start."""
    c.start_server()
    c.start_agent("n1")
    c.cli("queue", "set", "dev", "--deserved", "gpu=8")


def scenario_tty(c):
    """allot run -it -- bash: typed commands answered, stty size follows a
    resize, Ctrl-C interrupts a command but not the session, detach and
    attach with what was written meanwhile, exec beside it, exit 3."""
    start(c)
    before = last_job(c)
    t = Term(c, ["run", "-it", "--queue", "dev", "--gpus", "2", "--", "bash", "--norc",
                 "--noprofile", "-i"])
    try:
        jid = job_of_session(c, before)
        check(c.job(jid)["class"] == "build", "allot run's job is a build")
        t.send("echo hello $((6*7))\r")
        t.expect(r"hello 42")
        t.send("stty size\r")
        t.expect(r"24 80")
        t.resize(30, 100)
        # The new size goes with the next turn of the CLI's loop: ask
        # until it shows (at once, but for a loaded machine).
        for _ in range(20):
            t.send("stty size\r")
            m = t.expect(r"(\d+ \d+)\r\n")
            if m.group(1) == b"30 100":
                break
            time.sleep(0.5)
        check(m.group(1) == b"30 100", "stty size after a resize: %r" %
              m.group(1))
        # Ctrl-C reaches the job's terminal: sleep ends, bash stays.
        t.send("sleep 100; echo after-sleep $?\r")
        time.sleep(0.5)
        t.send(b"\x03")
        t.expect(r"\$ ?$|\^C", 10)
        t.send("echo alive-$((2*3))\r")
        t.expect(r"alive-6")
        t.send("echo gpus=$CUDA_VISIBLE_DEVICES.\r")
        gpus = t.expect(r"gpus=([0-9,]+)\.").group(1).decode()
        # Something written while nobody is attached, then a detach.
        t.send("(sleep 2; echo while-$((5*5))-away) &\r")
        time.sleep(0.3)
        t.send(b"\x10\x11")
        check(t.wait() == 0, "a detach exits 0")
        t.expect(r"detached from job %d" % jid)
        check(b"while-25-away" not in t.out, "written after the detach")
        wait_for(lambda: "while-25-away" in c.cli("logs", str(jid)).stdout,
                 20, "the output written while detached, in the log")
        check(c.job(jid)["state"] == "running", "the job runs on detached")
        # exec: the same node, the same GPUs.
        p = c.cli("exec", str(jid), "--", "sh", "-c",
                  "echo exec-gpus=$CUDA_VISIBLE_DEVICES.")
        check(p.stdout.strip() == "exec-gpus=%s." % gpus,
              "exec sees the job's GPUs %s: %r" % (gpus, p.stdout))
        # exec with stdin, and with a terminal of its own sized as ours.
        p = run_piped(c, ["exec", "-i", str(jid), "--", "cat"], b"piped\n")
        check(p.returncode == 0 and p.stdout == b"piped\n",
              "exec -i: %d %r" % (p.returncode, p.stdout))
        # Without -i its stdin is empty, though ours stays open.
        with subprocess.Popen([c.allot, "exec", str(jid), "--", "cat"],
                              stdin=subprocess.PIPE, env=c.env,
                              cwd=c.root) as p:
            try:
                check(p.wait(30) == 0, "exec -- cat without -i")
            except subprocess.TimeoutExpired:
                p.kill()
                raise Fail("allot exec -- cat without -i waits for stdin")
        te = Term(c, ["exec", "-it", str(jid), "--", "sh", "-c",
                      "stty size; tty"], rows=40, cols=120)
        te.expect(r"40 120")
        te.expect(r"/dev/pts/")
        check(te.wait() == 0, "exec -it exits 0")
        te.close()
        # Only the job's owner.
        bob = c.api("POST", "/v1/tokens", {"user": "bob"})[1]["token"]
        p = c.cli("exec", str(jid), "--", "true", token=bob, ok=False)
        check(p.returncode == 1 and "not yours" in p.stderr,
              "another user's exec is refused: %d %r" %
              (p.returncode, p.stderr))
        p = c.cli("attach", str(jid), token=bob, ok=False)
        check(p.returncode == 1 and "not yours" in p.stderr,
              "another user's attach is refused: %r" % p.stderr)
        p = c.cli("exec", str(jid), "--", "sh", "-c", "exit 7", ok=False)
        check(p.returncode == 7, "exec's status is its command's: %d" %
              p.returncode)
        t.close()
        # A job that runs without a terminal has none to attach to.
        plain = c.submit("--queue", "dev", "--", "sleep", "100")
        c.wait_state(plain, "running")
        p = c.cli("attach", str(plain), ok=False)
        check(p.returncode == 1 and "no terminal to attach to" in p.stderr,
              "attach to a job without a terminal: %d %r" %
              (p.returncode, p.stderr))
        # What is exec'd into a task ends with it (here, without cgroups,
        # it would otherwise wait on, and its allot exec with it).
        mark = os.path.join(c.root, "exec-in")
        with subprocess.Popen([c.allot, "exec", str(plain), "--", "sh", "-c",
                               "touch %s; exec sleep 300" % mark],
                              env=c.env, cwd=c.root) as p:
            try:
                wait_for(lambda: os.path.exists(mark), 20, "the exec")
                c.cli("cancel", str(plain))
                rc = p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                raise Fail("allot exec outlives the task it joined")
        check(rc == 128 + signal.SIGKILL,
              "an exec ended with its task: %d" % rc)
        t = Term(c, ["attach", str(jid)])
        t.expect(r"while-25-away")
        # A second attach takes the session over; the first one says so.
        t2 = Term(c, ["attach", str(jid)])
        t.expect(r"another attach took this session over")
        check(t.wait() == 0, "the attach taken over exits 0")
        t.close()
        t = t2
        # What the job's shell computes, never the local terminal's echo of
        # the keys (it echoes until allot's stream is up and makes it raw).
        t.send("echo back-$((3*4))-again\r")
        t.expect(r"back-12-again")
        # A signal to allot run -t detaches; the job runs on.
        t.p.send_signal(signal.SIGTERM)
        rc = t.wait()
        check(rc == 0, "SIGTERM detaches: exit 0, not %d: %r" %
              (rc, t.out[-300:]))
        t.expect(r"detached from job %d" % jid)
        t.close()
        t = Term(c, ["attach", str(jid)])
        time.sleep(0.5)
        t.send("exit 3\r")
        check(t.wait() == 3, "exit 3 gives status 3")
        c.wait_state(jid, "failed")
        logs = c.cli("logs", str(jid)).stdout
        check("hello 42" in logs and "back-12-again" in logs,
              "the session's output is in its log: %r" % logs[-300:])
    finally:
        t.close()


def run_piped(c, args, stdin=b"", timeout=60):
    p = subprocess.run([c.allot] + list(args), input=stdin,
                       capture_output=True, env=c.env, cwd=c.root,
                       timeout=timeout)
    return p


def vm_hwm_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def scenario_pipes(c):
    """allot run -i without a terminal: stdin to the job and its end,
    stdout and stderr kept apart, the exit status, a bad command line;
    a large output arrives whole while every process's memory stays
    bounded."""
    # Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
    # default) before it is used again, which any churn of buffers turns
    # into resident memory: keep it small, so that what is measured below
    # is what the code holds.
    asan = os.environ.get("ASAN_OPTIONS", "")
    c.env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
        "quarantine_size_mb=8"
    start(c)
    p = run_piped(c, ["run", "-i", "--queue", "dev", "--", "cat"], b"x\n")
    check(p.returncode == 0 and p.stdout == b"x\n",
          "echo x | allot run -i -- cat: %d %r %r" %
          (p.returncode, p.stdout, p.stderr))
    p = run_piped(c, ["run", "-i", "--queue", "dev", "--", "sh", "-c",
                      "read a; echo out-$a; echo err-$a >&2; exit 5"],
                  b"w\n")
    check(p.returncode == 5, "the remote status: %d" % p.returncode)
    check(p.stdout == b"out-w\n", "stdout: %r" % p.stdout)
    check(b"err-w\n" in p.stderr and b"out-w" not in p.stderr,
          "stderr stays stderr: %r" % p.stderr)
    # A signal ends the job: 128+N, as a shell says.
    p = run_piped(c, ["run", "--queue", "dev", "--", "sh", "-c",
                      "kill -TERM $$"])
    check(p.returncode == 128 + 15, "killed by SIGTERM: %d %r" %
          (p.returncode, p.stderr))
    # A job that may end before its stream opens: the same result.
    p = run_piped(c, ["run", "--queue", "dev", "--", "sh", "-c",
                      "echo quick; exit 4"])
    check(p.returncode == 4 and b"quick" in p.stdout,
          "a quick job: its output and status: %d %r" %
          (p.returncode, p.stdout))
    # Without -i the job's stdin is empty (its end at once), though ours
    # stays open: cat ends.
    with subprocess.Popen([c.allot, "run", "--queue", "dev", "--", "sh",
                           "-c", "cat; echo read-$?"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=c.env,
                          cwd=c.root) as p:
        try:
            rc = p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Fail("allot run -- cat without -i waits for stdin")
        check(rc == 0 and p.stdout.read() == b"read-0\n",
              "allot run without -i: %d" % rc)
    p = run_piped(c, ["run", "-i", "--gpus", "x", "--", "cat"])
    check(p.returncode == 2 and b"allot" in p.stderr,
          "bad options: exit 2: %d %r" % (p.returncode, p.stderr))
    p = run_piped(c, ["run", "-i"])
    check(p.returncode == 2, "no command: exit 2")
    # Interrupted while its job waits: the job is cancelled (a build job
    # beyond the queue's deserved quota waits for good).
    before = last_job(c)
    p = subprocess.Popen([c.allot, "run", "--queue", "dev", "--gpus", "16",
                          "--", "true"], stderr=subprocess.PIPE, env=c.env,
                         cwd=c.root)
    jid = job_of_session(c, before)
    time.sleep(1)
    check(c.job(jid)["state"] == "pending", "the job waits")
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=20)[1].decode()
    check(p.returncode == 130 and "job %d cancelled" % jid in err,
          "an interrupted wait: %d %r" % (p.returncode, err))
    check("pending" in err, "the wait was shown with its state: %r" % err)
    c.wait_state(jid, "cancelled")
    # On a terminal the wait is one line that updates in place: cut to
    # the terminal's width, or a reason longer than the line would wrap
    # and leave its first rows behind.
    t = Term(c, ["run", "--queue", "dev", "--gpus", "16", "--", "true"],
             cols=60)
    try:
        wait_for(lambda: t.read_some(0.5) is not None and
                 b"pending" in t.out, 20, "the wait shown")
        t.send(b"\x03")  # Ctrl-C: the terminal is not raw while it waits
        check(t.wait() == 130, "Ctrl-C while it waits: exit 130")
        # (the terminal's echo of the key, ^C, follows the last one)
        shown = [x.replace(b"^C", b"") for x in
                 re.findall(rb"\r\x1b\[K(job [^\r]*)", t.out)]
        check(shown and all(len(x) <= 59 for x in shown),
              "the waiting line fits 60 columns: %r" % shown)
    finally:
        t.close()
    # Bulk: both ways, counted at the far end, through bounded buffers.
    size = 96 << 20
    agent, server = c.agents["n1"].pid, c.server.pid
    base = {pid: vm_hwm_kb(pid) for pid in (agent, server)}
    cmd = [c.allot, "run", "-i", "--queue", "dev", "--", "sh", "-c",
           "yes | head -c %d" % size]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, env=c.env,
                          cwd=c.root) as p:
        got = 0
        # A slow reader first: back-pressure all the way to the job.
        time.sleep(1)
        while True:
            b = p.stdout.read(1 << 20)
            if not b:
                break
            got += len(b)
        rc = p.wait(60)
    check(rc == 0 and got == size, "yes | head -c %d arrived whole: %d "
          "bytes, exit %d" % (size, got, rc))
    p = run_piped(c, ["run", "-i", "--queue", "dev", "--", "wc", "-c"],
                  b"z" * (32 << 20))
    check(p.stdout.strip() == str(32 << 20).encode(),
          "32 MiB of stdin arrived whole: %r" % p.stdout)
    for pid, name in ((agent, "agent"), (server, "server")):
        grew = vm_hwm_kb(pid) - base[pid]
        check(grew < 48 << 10, "the %s's memory stayed bounded: +%d KiB "
              "for %d MiB relayed" % (name, grew, size >> 20))


def scenario_port(c):
    """port-forward reaches a web server started in a session, several
    connections at once; a closed port gets a clear error."""
    start(c)
    remote = e2e.free_port()
    before = last_job(c)
    t = Term(c, ["run", "-it", "--queue", "dev", "--", "python3", "-m",
                 "http.server", "--bind", "127.0.0.1", str(remote)])
    pf = None
    try:
        jid = job_of_session(c, before)
        t.expect(r"Serving HTTP")
        local = e2e.free_port()
        pf = subprocess.Popen([c.allot, "port-forward", str(jid),
                               "%d:%d" % (local, remote)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=c.env, cwd=c.root)
        line = pf.stdout.readline().decode()
        check("Forwarding 127.0.0.1:%d" % local in line, "port-forward "
              "says where it listens: %r" % line)
        open(os.path.join(c.root, "hello.txt"), "w").write("hello-port\n")
        results = []

        def get():
            url = "http://127.0.0.1:%d/hello.txt" % local
            with urllib.request.urlopen(url, timeout=20) as r:
                results.append(r.read())
        threads = [threading.Thread(target=get) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        check(results == [b"hello-port\n"] * 4,
              "four connections at once: %r" % results)
        # A port nothing listens on: the connection ends, with why.
        closed = e2e.free_port()
        pf2 = subprocess.Popen([c.allot, "port-forward", str(jid),
                                "0:%d" % closed], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=c.env, cwd=c.root)
        got = re.search(r"127\.0\.0\.1:(\d+)",
                        pf2.stdout.readline().decode())
        with socket.create_connection(("127.0.0.1", int(got.group(1))),
                                      timeout=20) as so:
            check(so.recv(100) == b"", "a closed remote port: the "
                  "connection ends")
        pf2.kill()
        err = pf2.communicate()[1].decode()
        check("cannot connect to port %d" % closed in err,
              "port-forward says why: %r" % err)
        p = c.cli("port-forward", str(jid), "99999", ok=False)
        check(p.returncode == 2, "a bad port: exit 2: %r" % p.stderr)
    finally:
        if pf is not None:
            pf.kill()
            pf.wait()
        t.close()


def scenario_restart(c):
    """A kill -9 of the controller during a session: the CLI says the
    connection is lost, the job keeps running, and attach works once the
    controller is back."""
    start(c)
    before = last_job(c)
    t = Term(c, ["run", "-it", "--queue", "dev", "--", "bash", "--norc",
                 "--noprofile", "-i"])
    try:
        jid = job_of_session(c, before)
        t.send("echo first-$((1+1))\r")
        t.expect(r"first-2")
        c.kill_server()
        check(t.wait() == 255, "a lost controller: exit 255")
        t.expect(r"lost the connection")
        t.close()
        c.start_server()
        c.wait_state(jid, "running")
        t = Term(c, ["attach", str(jid)])
        time.sleep(0.5)
        t.send("echo second-$((2+2))\r")
        t.expect(r"second-4", 30)
        t.send("exit\r")
        check(t.wait() == 0, "exit gives 0")
    finally:
        t.close()


SCENARIOS = {k[len("scenario_"):]: v for k, v in globals().items()
             if k.startswith("scenario_")}

if __name__ == "__main__":
    e2e.SCENARIOS = {k: v for k, v in SCENARIOS.items()}
    sys.exit(e2e.main())
