#!/usr/bin/env python3
"""End-to-end tests of the allot command's two programs: allot, the client,
which loads only what a client needs, and allot-daemon, which allot execs
for `allot server`, `allot agent` and `allot dev`.

Usage: e2e_cli.py SCENARIO PATH/TO/allot

Uses e2e.py's Cluster (private ports and directories, processes always
stopped, logs kept on failure).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

# What a client may map: the C library, libm, jansson, the loader; in a
# sanitizer build also the sanitizers' runtimes and what they load.
CLIENT_LIBS = ("libc.so", "libm.so", "libjansson.so", "ld-linux")
SANITIZERS = ("libasan.so", "libubsan.so", "liblsan.so", "libtsan.so")
SANITIZER_LIBS = SANITIZERS + ("libgcc_s.so", "libstdc++.so")


def mapped_libs(pid):
    """The shared objects mapped by a process (from /proc/PID/maps)."""
    libs = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and ".so" in parts[5]:
                libs.add(os.path.basename(parts[5]))
    return libs


def foreign(libs):
    ok = CLIENT_LIBS
    if any(lib.startswith(SANITIZERS) for lib in libs):
        ok += SANITIZER_LIBS
    return sorted(lib for lib in libs if not lib.startswith(ok))


def scenario_client_libs(c):
    """`allot submit` and `allot ls`, caught while they wait for a server
    that never answers, map no library beyond CLIENT_LIBS (no libpq, no
    libmicrohttpd, no libcrypto); the daemons, exec'd by the same command,
    map theirs."""
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(16)
    env = dict(c.env, ALLOT_SERVER="http://127.0.0.1:%d" %
               lsn.getsockname()[1], ALLOT_TOKEN="al_none")
    held = []
    for args in (["submit", "--", "true"], ["ls"]):
        p = subprocess.Popen([c.allot] + args, env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            conn, _ = lsn.accept()  # it has started and is waiting
            held.append(conn)
            libs = mapped_libs(p.pid)
        finally:
            p.kill()
            p.wait(10)
        check(any(lib.startswith("libjansson.so") for lib in libs),
              "read allot %s's maps: %s" % (args[0], sorted(libs)))
        check(not foreign(libs), "allot %s maps only a client's libraries, "
              "not %s" % (args[0], foreign(libs)))
        print("  allot %s maps %d shared objects: %s" %
              (args[0], len(libs), " ".join(sorted(libs))))
    for conn in held:
        conn.close()
    lsn.close()

    # The daemons: the same pid (exec, not a child), allot-daemon's image,
    # the controller's libraries.
    c.start_server()
    exe = os.readlink("/proc/%d/exe" % c.server.pid)
    check(os.path.basename(exe) == "allot-daemon",
          "allot server runs as allot-daemon in the same process: %s" % exe)
    libs = mapped_libs(c.server.pid)
    check(any(lib.startswith("libmicrohttpd.so") for lib in libs),
          "the controller maps libmicrohttpd: %s" % sorted(libs))
    with open("/proc/%d/cmdline" % c.server.pid) as f:
        argv = f.read().split("\0")
    check(argv[:2] == ["allot", "server"],
          "ps shows it as allot server: %s" % argv[:4])
    c.start_agent("n1")
    jid = c.submit("--", "sh", "-c", "echo split")
    c.wait_state(jid, "completed")
    check(c.cli("logs", str(jid)).stdout == "split\n", "the job's output")


def scenario_cli_layout(c):
    """The help still lists every command; `allot server --help` and its
    usage errors are allot-daemon's, word for word as before; allot finds
    allot-daemon where an install puts it (PREFIX/bin and
    PREFIX/libexec/allot) and says so clearly when it is missing."""
    r = c.cli("--help")
    for cmd in ("sim", "dev", "server", "agent", "submit", "ls", "show",
                "logs", "cancel", "queues", "nodes", "version"):
        check("\n  allot %s" % cmd in r.stdout, "--help lists %s" % cmd)
    check("allot server [--listen HOST:PORT] [--state DIR]" in r.stdout,
          "--help shows the server's brief options")
    r = c.cli("server", "--help")
    check(r.stdout.startswith("usage: allot server [options]"),
          "allot server --help: %r" % r.stdout[:60])
    r = c.cli("agent", "--bogus", ok=False)
    check(r.returncode == 2 and "--bogus" in r.stderr,
          "a daemon's usage error exits 2: %d %r" % (r.returncode, r.stderr))
    daemon = os.path.join(os.path.dirname(c.allot), "allot-daemon")
    r = subprocess.run([daemon, "submit"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 2 and "allot server" in r.stderr,
          "allot-daemon refuses a client command: %r" % r.stderr)

    # An installed layout, moved elsewhere (as meson install --destdir).
    prefix = os.path.join(c.root, "prefix")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "libexec", "allot"))
    shutil.copy(c.allot, os.path.join(prefix, "bin", "allot"))
    shutil.copy(daemon, os.path.join(prefix, "libexec", "allot",
                                     "allot-daemon"))
    r = subprocess.run([os.path.join(prefix, "bin", "allot"), "agent",
                        "--probe", "--fake-gpus", "2xH100-80GB"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and '"emulated": true' in r.stdout,
          "allot in PREFIX/bin runs PREFIX/libexec/allot/allot-daemon: %r" %
          r.stderr)
    os.unlink(os.path.join(prefix, "libexec", "allot", "allot-daemon"))
    r = subprocess.run([os.path.join(prefix, "bin", "allot"), "server",
                        "--help"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 1 and "cannot find allot-daemon" in r.stderr,
          "a missing allot-daemon is reported: %d %r" %
          (r.returncode, r.stderr))
    # The client commands do not need it.
    r = subprocess.run([os.path.join(prefix, "bin", "allot"), "version"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and r.stdout.startswith("allot "),
          "allot version without allot-daemon: %r" % r.stdout)


def scenario_dev_exec(c):
    """`allot dev` through allot's door: the pid allot was started with is
    the controller's (allot-daemon), its agent is the same program, and
    SIGTERM to that pid stops both."""
    env = dict(c.env)
    env.pop("ALLOT_SERVER", None)
    env.pop("ALLOT_TOKEN", None)
    log = open(os.path.join(c.root, "dev.log"), "wb")
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--fake-gpus", "2xH100-80GB"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready at"), "dev ready: %r" % line)
    check(os.path.basename(os.readlink("/proc/%d/exe" % p.pid)) ==
          "allot-daemon", "allot dev's pid runs allot-daemon")
    kids = subprocess.run(["ps", "--ppid", str(p.pid), "-o", "pid="],
                          capture_output=True, text=True).stdout.split()
    check(len(kids) == 1, "one agent: %s" % kids)
    agent = int(kids[0])
    with open("/proc/%d/cmdline" % agent) as f:
        check(f.read().split("\0")[:2] == ["allot", "agent"],
              "the agent is `allot agent`")
    check(os.path.basename(os.readlink("/proc/%d/exe" % agent)) ==
          "allot-daemon", "the agent runs allot-daemon")
    r = subprocess.run([c.allot, "submit", "--", "echo", "hi"], env=env,
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "submit to allot dev: %r" % r.stderr)
    jid = r.stdout.strip()
    wait_for(lambda: subprocess.run(
        [c.allot, "logs", jid], env=env, capture_output=True, text=True,
        timeout=30).stdout == "hi\n", 20, "the job's output")
    # A build session with a GPU starts on a new allot dev: queue default
    # deserves the cluster's GPUs (a build job never borrows).
    try:
        r = subprocess.run([c.allot, "run", "--gpus", "1", "--", "sh", "-c",
                            "echo gpu-$CUDA_VISIBLE_DEVICES"], env=env,
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise e2e.Fail("allot run --gpus 1 on a new allot dev never started")
    check(r.returncode == 0 and r.stdout.startswith("gpu-"),
          "allot run --gpus 1: %d %r %r" % (r.returncode, r.stdout, r.stderr))
    r = subprocess.run([c.allot, "queue", "set", "default", "--deserved",
                        "gpu=1"], env=env, capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 0, "queue set: %r" % r.stderr)
    p.send_signal(signal.SIGTERM)
    check(p.wait(10) == 0, "dev exits cleanly on SIGTERM")
    # allot dev waited for its agent before it exited.
    check(not os.path.exists("/proc/%d" % agent),
          "the agent stopped with allot dev")
    # Started again on the same state: the queue is as it was set.
    p = subprocess.Popen([c.allot, "dev", "--listen", "127.0.0.1:0",
                          "--fake-gpus", "2xH100-80GB"],
                         stdout=subprocess.PIPE, stderr=log, env=env,
                         start_new_session=True)
    c.procs.append(p)
    line = p.stdout.readline().decode()
    check(line.startswith("allot dev: ready at"), "dev ready: %r" % line)
    r = subprocess.run([c.allot, "queues", "--json"], env=env,
                       capture_output=True, text=True, timeout=30)
    q = [x for x in json.loads(r.stdout) if x["name"] == "default"][0]
    check(q["quota"]["gpu"]["deserved"] == 1, "default kept: %s" % q)
    p.send_signal(signal.SIGTERM)
    check(p.wait(10) == 0, "dev exits cleanly on SIGTERM")


SCENARIOS = {
    "client_libs": scenario_client_libs,
    "cli_layout": scenario_cli_layout,
    "dev_exec": scenario_dev_exec,
}

if __name__ == "__main__":
    e2e.SCENARIOS = SCENARIOS
    sys.exit(e2e.main())
