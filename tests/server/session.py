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
        time.sleep(0.3)
        t.send("stty size\r")
        t.expect(r"30 100")
        # Ctrl-C reaches the job's terminal: sleep ends, bash stays.
        t.send("sleep 100; echo after-sleep $?\r")
        time.sleep(0.5)
        t.send(b"\x03")
        t.expect(r"\$ ?$|\^C", 10)
        t.send("echo alive\r")
        t.expect(r"alive")
        t.send("echo gpus=$CUDA_VISIBLE_DEVICES.\r")
        gpus = t.expect(r"gpus=([0-9,]+)\.").group(1).decode()
        # Something written while nobody is attached, then a detach.
        t.send("(sleep 1; echo while-away) &\r")
        time.sleep(0.3)
        t.send(b"\x10\x11")
        check(t.wait() == 0, "a detach exits 0")
        t.expect(r"detached from job %d" % jid)
        time.sleep(1.5)
        check(c.job(jid)["state"] == "running", "the job runs on detached")
        # exec: the same node, the same GPUs.
        p = c.cli("exec", str(jid), "--", "sh", "-c",
                  "echo exec-gpus=$CUDA_VISIBLE_DEVICES.")
        check(p.stdout.strip() == "exec-gpus=%s." % gpus,
              "exec sees the job's GPUs %s: %r" % (gpus, p.stdout))
        p = c.cli("exec", str(jid), "--", "sh", "-c", "exit 7", ok=False)
        check(p.returncode == 7, "exec's status is its command's: %d" %
              p.returncode)
        t.close()
        t = Term(c, ["attach", str(jid)])
        t.expect(r"while-away")
        t.send("echo back-again\r")
        t.expect(r"back-again")
        t.send("exit 3\r")
        check(t.wait() == 3, "exit 3 gives status 3")
        c.wait_state(jid, "failed")
        logs = c.cli("logs", str(jid)).stdout
        check("hello 42" in logs and "back-again" in logs,
              "the session's output is in its log: %r" % logs[-300:])
    finally:
        t.close()


SCENARIOS = {k[len("scenario_"):]: v for k, v in globals().items()
             if k.startswith("scenario_")}

if __name__ == "__main__":
    e2e.SCENARIOS = {k: v for k, v in SCENARIOS.items()}
    sys.exit(e2e.main())
