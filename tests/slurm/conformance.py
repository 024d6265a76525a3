#!/usr/bin/env python3
"""Slurm's commands on allot, measured against real Slurm.

Usage: conformance.py PATH/TO/allot PATH/TO/docs/slurm.md [--write-doc]

Every case runs the same command lines against a real `allot server` with
two agents on loopback (through the links `allot slurm-commands` makes)
and, when a private Slurm from ../shared/slurm-peer is up (its
/tmp/slurmpeer/env.sh exists and `sinfo` answers), against that Slurm, and
compares what a tool would read: exit codes, headers, the shape of every
line (fields, widths, state names, hostlists), `--parsable` and `-P`
output, and the Slurm variables inside a job.  The allot half always runs
and checks allot against what Slurm prints (recorded from Slurm 22.05);
the comparison runs when the peer is up.

Each case has a verdict for docs/slurm.md's table: `same`, `differs`
(why) or `refused` (allot says no, with a message naming the option).
The table in docs/slurm.md between the markers must be the one this file
makes (--write-doc rewrites it).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "server"))
import e2e  # noqa: E402
from e2e import Fail, check  # noqa: E402

PEER_ENV = os.environ.get("SLURMPEER_ROOT", "/tmp/slurmpeer") + "/env.sh"
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY",
         "NODE_FAIL", "PREEMPTED")
SLURM_STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED",
                "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY",
                "REQUEUED", "COMPLETING")


class Side:
    """One scheduler behind Slurm's command names."""

    def __init__(self, name, env, cwd):
        self.name, self.env, self.cwd = name, env, cwd

    def run(self, *args, stdin=None, timeout=60):
        p = subprocess.run(list(args), capture_output=True, text=True,
                           env=self.env, cwd=self.cwd, input=stdin,
                           timeout=timeout)
        return p

    def sbatch(self, *args, **kw):
        p = self.run("sbatch", "--parsable", *args, **kw)
        check(p.returncode == 0 and re.fullmatch(r"\d+(;\S+)?\n", p.stdout),
              "%s: sbatch --parsable %s: exit %d: %r %r" % (
                  self.name, " ".join(args), p.returncode, p.stdout,
                  p.stderr))
        return p.stdout.strip().split(";")[0]

    def final(self, jid, timeout=60):
        """The tool's loop: sacct -P -n until a final state."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self.run("sacct", "-P", "-n", "-X",
                         "--format=JobIdRaw,State,ExitCode", "-j", jid)
            for line in p.stdout.splitlines():
                f = line.split("|")
                if f[0] == jid and f[1].split()[0] in FINAL:
                    return f
            time.sleep(0.2)
        raise Fail("%s: job %s never reached a final state" % (self.name,
                                                                jid))

    def running(self, jid, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self.run("squeue", "-h", "-j", jid, "-o", "%T")
            if p.stdout.strip() == "RUNNING":
                return
            time.sleep(0.1)
        raise Fail("%s: job %s never ran" % (self.name, jid))


def shape(line):
    """A line with its values' letters and digits abstracted: what stays
    is where the columns are."""
    return re.sub(r"[^\s|]+", lambda m: "x" * len(m.group(0)), line)


def columns(line):
    """The end of every right-aligned column: (start, end) of each word."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]


# -- cases: each gets a side and returns what is compared ------------------
# A case returns a dict; keys starting with '_' are shown, not compared.

def c_parsable(s):
    p = s.run("sbatch", "--parsable", "--wrap", "true")
    return {"rc": p.returncode, "stdout": re.sub(r"\d+", "N", p.stdout)}


def c_submitted(s):
    p = s.run("sbatch", "--wrap", "true")
    return {"rc": p.returncode, "stdout": re.sub(r"\d+", "N", p.stdout)}


def c_unknown_option(s):
    p = s.run("sbatch", "--no-such-option", "--wrap", "true")
    return {"rc": p.returncode, "stderr": p.stderr.splitlines()[:1]}


def c_no_shebang(s):
    with open(os.path.join(s.cwd, "noshebang.sh"), "w") as f:
        f.write("echo hi\n")
    p = s.run("sbatch", "noshebang.sh")
    return {"rc": p.returncode, "stderr": p.stderr}


def c_empty(s):
    p = s.run("sbatch", stdin="")
    return {"rc": p.returncode, "stderr": p.stderr}


def c_bad_partition(s):
    p = s.run("sbatch", "-p", "nosuchpart", "--wrap", "true")
    return {"rc": p.returncode, "stderr": p.stderr.splitlines()[-1:]}


def c_bad_time(s):
    p = s.run("sbatch", "-t", "soon", "--wrap", "true")
    return {"rc": p.returncode}


def c_array(s):
    p = s.run("sbatch", "--array=1-2", "-o", "arr-%A_%a.out", "--wrap",
              "echo $SLURM_ARRAY_TASK_ID")
    jid = p.stdout.split()[-1] if p.returncode == 0 else "0"
    files = []
    for k in (1, 2):
        f = os.path.join(s.cwd, "arr-%s_%d.out" % (jid, k))
        end = time.monotonic() + 30
        while not os.path.exists(f) and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(0.3)
        files.append(open(f).read() if os.path.exists(f) else None)
    return {"rc": p.returncode, "files": files, "_stderr": p.stderr}


def c_dependency(s):
    a = s.sbatch("--wrap", "exit 1")
    b = s.sbatch("--dependency=afternotok:%s" % a, "--wrap", "true")
    return {"b": s.final(b)[1]}


def c_script_array(s):
    """A script's #SBATCH --array: an array of ten."""
    with open(os.path.join(s.cwd, "arr.sh"), "w") as f:
        f.write("#!/bin/bash\n#SBATCH -J sweep\n#SBATCH --array=0-9\n"
                "echo $SLURM_ARRAY_TASK_ID\n")
    p = s.run("sbatch", "arr.sh")
    s.run("scancel", p.stdout.split()[-1]) if p.returncode == 0 else None
    return {"rc": p.returncode, "stderr": p.stderr,
            "stdout": re.sub(r"\d+", "N", p.stdout)}


def c_array_listing(s):
    """An array in squeue (pending elements folded, -r one by one) and
    in sacct (ID_INDEX)."""
    held_id = s.sbatch("-H", "--array=0-3,7", "--wrap", "true")
    p = s.run("squeue", "-h", "-j", held_id, "-o", "%i %A %K %T %r")
    q = s.run("squeue", "-h", "-r", "-j", held_id, "-o", "%i")
    s.run("scancel", held_id)
    done = s.sbatch("--array=0-2", "--wrap", "true")
    rows = []
    end = time.monotonic() + 60
    while time.monotonic() < end:
        r = s.run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", done)
        rows = sorted(r.stdout.splitlines())
        if len(rows) == 3 and all("COMPLETED" in x for x in rows):
            break
        time.sleep(0.3)
    def n(t):  # the arrays' ids, where they stand as ids
        for i in (held_id, done):
            t = re.sub(r"(?m)(^|\s)%s(?=_|\s|$)" % i, r"\1ID", t)
        return t
    return {"squeue": n(p.stdout), "r": n(q.stdout),
            "sacct": [n(x) for x in rows]}


def c_exit_codes(s):
    ok, bad, sig = (s.sbatch("--wrap", "true"), s.sbatch("--wrap", "exit 3"),
                    s.sbatch("--wrap", "kill -9 $$"))
    return {"states": [s.final(j)[1:] for j in (ok, bad, sig)]}


def c_output_pattern(s):
    jid = s.sbatch("-J", "pat", "-o", "o-%j-%x-%a-%%.txt", "--wrap",
                   "echo out; echo err >&2")
    s.final(jid)
    name = "o-%s-pat-4294967294-%%.txt" % jid
    path = os.path.join(s.cwd, name)
    end = time.monotonic() + 10
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.1)
    text = open(path).read() if os.path.exists(path) else None
    return {"file": text}


def c_default_output(s):
    jid = s.sbatch("--wrap", "echo hello")
    s.final(jid)
    path = os.path.join(s.cwd, "slurm-%s.out" % jid)
    return {"file": open(path).read() if os.path.exists(path) else None}


def c_error_file(s):
    jid = s.sbatch("-o", "split-%j.out", "-e", "split-%j.err", "--wrap",
                   "echo out; echo err >&2")
    s.final(jid)
    read = lambda x: open(os.path.join(s.cwd, x % jid)).read()  # noqa
    return {"out": read("split-%s.out"), "err": read("split-%s.err")}


def c_env(s):
    with open(os.path.join(s.cwd, "env.sh"), "w") as f:
        f.write("#!/bin/bash\n#SBATCH -J envjob\n#SBATCH -c 2\n"
                "env | grep ^SLURM | sort\n")
    jid = s.sbatch("-o", "env-%j.out", "env.sh")
    s.final(jid)
    env = dict(line.split("=", 1) for line in
               open(os.path.join(s.cwd, "env-%s.out" % jid)).read()
               .splitlines() if "=" in line)
    keep = ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NAME", "SLURM_NTASKS",
            "SLURM_NPROCS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
            "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_TASKS_PER_NODE",
            "SLURM_SUBMIT_DIR", "SLURM_CPUS_PER_TASK", "SLURM_JOB_NODELIST",
            "SLURM_NODELIST", "SLURM_JOB_ACCOUNT", "SLURM_JOB_PARTITION",
            "SLURM_SUBMIT_HOST")
    out = {}
    for k in keep:
        v = env.get(k)
        if v is None:
            out[k] = None
        elif k == "SLURM_SUBMIT_DIR":
            out[k] = "cwd" if v == s.cwd else v
        elif k in ("SLURM_JOB_ID", "SLURM_JOBID"):
            out[k] = "id" if v == jid else v
        elif k in ("SLURM_JOB_NODELIST", "SLURM_NODELIST",
                   "SLURM_JOB_ACCOUNT", "SLURM_JOB_PARTITION"):
            out[k] = "set" if v else ""
        else:
            out[k] = v
    return out


def c_ntasks_env(s):
    jid = s.sbatch("-n", "2", "-o", "nt-%j.out", "--wrap",
                   "echo $SLURM_NTASKS $SLURM_JOB_NODELIST")
    s.final(jid)
    text = open(os.path.join(s.cwd, "nt-%s.out" % jid)).read()
    first = text.splitlines()[0].split()
    return {"ntasks": first[0],
            "hostlist": bool(re.fullmatch(r"[\w.-]+(\[[\d,-]+\])?"
                                          r"(,[\w.-]+(\[[\d,-]+\])?)*",
                                          first[1]))}


def held(s):
    return s.sbatch("-H", "-J", "heldjob", "--wrap", "true")


def c_squeue_default(s):
    jid = held(s)
    p = s.run("squeue", "-j", jid)
    s.run("scancel", jid)
    lines = p.stdout.splitlines()
    return {"rc": p.returncode, "header": lines[0],
            "line": columns(lines[1])[4:7] if len(lines) > 1 else None,
            "words": [w for i, w in enumerate(lines[1].split()[2:]) if i != 1]
            if len(lines) > 1 else None,
            "_out": p.stdout}


def c_squeue_long(s):
    jid = held(s)
    p = s.run("squeue", "-l", "-j", jid)
    s.run("scancel", jid)
    lines = p.stdout.splitlines()
    return {"rc": p.returncode, "header": lines[1] if len(lines) > 1 else None,
            "date": bool(re.match(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$",
                                  lines[0])),
            "state": lines[2].split()[4] if len(lines) > 2 else None}


def c_squeue_format(s):
    jid = held(s)
    p = s.run("squeue", "-j", jid, "-o", "%i|%j|%t|%T|%M|%l|%D|%R|%C")
    q = s.run("squeue", "-j", jid, "-o", "%.5i %10j %-8T")
    r = s.run("squeue", "-h", "-j", jid, "-O", "JobID,Name:20,State")
    s.run("scancel", jid)
    return {"lines": [p.stdout.splitlines()[0],
                      re.sub(r"^\d+", "ID", p.stdout.splitlines()[1])],
            "widths": [q.stdout.splitlines()[0],
                       shape(q.stdout.splitlines()[1][5:])],
            "O": shape(r.stdout.rstrip("\n")[20:])}


def c_squeue_states(s):
    jid = held(s)
    p = s.run("squeue", "-h", "-t", "PD", "-n", "heldjob", "-o", "%T %r")
    q = s.run("squeue", "-h", "-t", "R", "-n", "heldjob")
    s.run("scancel", jid)
    return {"pd": p.stdout.splitlines()[:1], "r": q.stdout}


def c_squeue_resources(s):
    """A job waiting for GPUs that running jobs hold: Slurm's Resources."""
    blockers = [s.sbatch("--gres=gpu:8", "--wrap", "sleep 120")
                for _ in range(s.nodes)]
    for b in blockers:
        s.running(b)
    jid = s.sbatch("--gres=gpu:1", "--wrap", "true")
    end = time.monotonic() + 10
    reason = None
    while time.monotonic() < end:
        reason = s.run("squeue", "-h", "-j", jid, "-o", "%t %r").stdout
        if reason.strip() not in ("", "PD None"):
            break
        time.sleep(0.2)
    s.run("scancel", *blockers)
    s.final(jid)
    return {"reason": reason}


def c_squeue_badjob(s):
    p = s.run("squeue", "-j", "999999")
    return {"rc": p.returncode, "stderr": p.stderr}


def c_squeue_unknown(s):
    p = s.run("squeue", "--no-such-option")
    return {"rc": p.returncode, "stderr": p.stderr.splitlines()[:1]}


SACCT_FIELDS = ("JobID,JobIDRaw,JobName,State,ExitCode,Elapsed,Start,End,"
                "Submit,AllocTRES,AllocCPUS,ReqMem,NodeList,User,Account,"
                "Partition,Timelimit")


def c_sacct_parsable(s):
    jid = s.sbatch("--wrap", "exit 3")
    s.final(jid)
    p = s.run("sacct", "-P", "-o", SACCT_FIELDS, "-j", jid)
    lines = p.stdout.splitlines()
    f = lines[1].split("|") if len(lines) > 1 else []
    times = [bool(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", x))
             for x in f[6:9]]
    return {"rc": p.returncode, "header": lines[0], "nfields":
            [len(x.split("|")) for x in lines],
            "job": [f[0] == jid, f[3], f[4], bool(re.fullmatch(
                r"\d\d:\d\d:\d\d", f[5]))] + times if f else None,
            "steps": [re.sub(r"^\d+", "ID", x.split("|")[0])
                      for x in lines[1:]]}


def c_sacct_default(s):
    jid = s.sbatch("--wrap", "true")
    s.final(jid)
    p = s.run("sacct", "-j", jid)
    lines = p.stdout.splitlines()
    return {"rc": p.returncode, "header": lines[:2],
            "line": [len(lines[2]), lines[2].split()[0] == jid,
                     lines[2].split()[-2:]] if len(lines) > 2 else None,
            "_out": p.stdout}


def c_sacct_widths(s):
    jid = s.sbatch("--wrap", "true")
    s.final(jid)
    p = s.run("sacct", "-X", "-o", "JobID%20,State%5,JobName%-3", "-j", jid)
    q = s.run("sacct", "-X", "-n", "-p", "--delimiter=,", "-o",
              "JobIDRaw,State", "-j", jid)
    lines = p.stdout.splitlines()
    return {"header": lines[:2], "line": shape(lines[2][20:])
            if len(lines) > 2 else None,
            "cut": lines[2].split()[1:2] if len(lines) > 2 else None,
            "p": re.sub(r"^\d+", "ID", q.stdout)}


def c_sacct_unknown_field(s):
    p = s.run("sacct", "-o", "JobID,NoSuchField")
    return {"rc": p.returncode}


def c_sacct_json(s):
    import json
    jid = s.sbatch("--wrap", "exit 2")
    s.final(jid)
    p = s.run("sacct", "--json", "-j", jid)
    j = json.loads(p.stdout)["jobs"][0]
    return {"rc": p.returncode, "job_id": j["job_id"] == int(jid),
            "state": j["state"]["current"], "_exit": j["exit_code"]}


def c_sinfo(s):
    p = s.run("sinfo")
    q = s.run("sinfo", "-N")
    r = s.run("sinfo", "-s")
    o = s.run("sinfo", "-h", "-o", "%P|%a|%l|%D|%t|%G")
    return {"header": p.stdout.splitlines()[0],
            "first": bool(re.match(r"\w+\*\s+up\s+\S+\s+\d+\s+\w+ \S+$",
                                   p.stdout.splitlines()[1])),
            "N": q.stdout.splitlines()[0], "s": r.stdout.splitlines()[0],
            "o": re.sub(r"^\w+\*\|up\|infinite\|\d+\|(idle|mix|alloc)\|gpu:\d+$",
                        "P*|up|infinite|D|state|gpu:G",
                        o.stdout.splitlines()[0])}


def c_scontrol_show(s):
    jid = held(s)
    p = s.run("scontrol", "show", "job", jid)
    s.run("scancel", jid)
    keys = re.findall(r"(\w[\w/:]*)=", p.stdout)
    want = ("JobId", "JobName", "UserId", "JobState", "Reason", "ExitCode",
            "RunTime", "TimeLimit", "SubmitTime", "StartTime", "EndTime",
            "Partition", "NodeList", "NumNodes", "NumCPUs", "NumTasks",
            "WorkDir")
    return {"rc": p.returncode, "first": re.sub(r"\d+", "N",
                                                 p.stdout.splitlines()[0]),
            "keys": [k for k in want if k in keys],
            "state": [list(x) for x in re.findall(
                r"JobState=(\S+) Reason=(\S+)", p.stdout)]}


def c_scontrol_badjob(s):
    p = s.run("scontrol", "show", "job", "999999")
    q = s.run("scontrol", "hold", "999999")
    return {"rc": [p.returncode, q.returncode], "stderr": [p.stderr,
                                                            q.stderr]}


def c_hold_release(s):
    jid = held(s)
    a = s.run("squeue", "-h", "-j", jid, "-o", "%T %r").stdout
    s.run("scontrol", "release", jid)
    s.final(jid)
    return {"held": a, "after": s.final(jid)[1]}


def c_scontrol_requeue(s):
    """requeue of a running job, a pending one, an ended one submitted
    with --no-requeue, an unknown one."""
    run = s.sbatch("--requeue", "--wrap", "sleep 30")
    done = s.sbatch("--no-requeue", "--wrap", "true")
    held_id = s.sbatch("--requeue", "-H", "--wrap", "true")
    s.running(run)
    s.final(done)
    out = []
    for j in (run, held_id, done, "999999"):
        p = s.run("scontrol", "requeue", j)
        out.append([p.returncode, re.sub(r"\d+", "N", p.stderr)])
    s.run("scancel", run, held_id)
    return {"requeue": out}


def c_scontrol_update(s):
    """scontrol update of held jobs: TimeLimit=+T, -T, unlimited, a list
    of jobs, an unknown one among them, a decrement too large."""
    a = s.sbatch("-H", "-t", "30", "--wrap", "true")
    b = s.sbatch("-H", "-t", "30", "--wrap", "true")
    out = []
    for args in (["JobId=" + a, "TimeLimit=+5"],
                 ["JobId=" + a, "TimeLimit=-10"],
                 ["JobId=" + a, "TimeLimit=unlimited"],
                 ["JobId=" + a, "TimeLimit=30"],
                 ["JobId=%s,%s" % (a, b), "TimeLimit=20"],
                 ["JobId=%s,999999" % a, "TimeLimit=-5"],
                 ["jobid=" + a, "timelimit=-100"]):
        p = s.run("scontrol", "update", *args)
        q = s.run("squeue", "-h", "-j", "%s,%s" % (a, b), "-o", "%i %l")
        limits = sorted(q.stdout.split("\n"))
        out.append([p.returncode, re.sub(r"\d+", "N", p.stderr),
                    [x.split()[-1] for x in limits if x]])
    s.run("scancel", a, b)
    return {"update": out}


def c_scontrol_priority(s):
    """scontrol update Priority= and Nice= of a pending job (waiting on a
    dependency), as an admin: the values %y and %Q show, a priority that
    makes a later nice ignored, Priority=0 as a hold, bad values."""
    dep = s.sbatch("-H", "--wrap", "true")
    a = s.sbatch("-d", "afterok:" + dep, "--wrap", "true")
    out = []
    for kv, fmt in (("Nice=10", "%y"), ("Nice=-5", "%y"), ("Nice=abc", "%y"),
                    ("Nice=3000000000", "%y"), ("Priority=abc", "%y"),
                    ("Priority=4294967294", "%y"), ("Priority=100", "%Q %y"),
                    ("Nice=10", "%Q %y"), ("Priority=0", "%T %Q"),
                    ("Priority=7", "%T %Q")):
        p = s.run("scontrol", "update", "JobId=" + a, kv)
        q = s.run("squeue", "-h", "-j", a, "-o", fmt)
        out.append([kv, p.returncode, re.sub(r"\d+", "N", p.stderr),
                    q.stdout])
    s.run("scancel", a, dep)
    return {"update": out}


def c_scontrol_numnodes(s):
    """scontrol update NumNodes= of a pending job (1, 0) and of a running
    one (its count, another)."""
    dep = s.sbatch("-H", "--wrap", "true")
    a = s.sbatch("-d", "afterok:" + dep, "--wrap", "true")
    r = s.sbatch("--wrap", "sleep 60")
    s.running(r)
    out = []
    for jid, kv in ((a, "NumNodes=1"), (a, "NumNodes=0"), (r, "NumNodes=1"),
                    (r, "NumNodes=2")):
        p = s.run("scontrol", "update", "JobId=" + jid, kv)
        q = s.run("squeue", "-h", "-j", jid, "-o", "%D")
        out.append([kv, p.returncode, re.sub(r"\d+", "N", p.stderr),
                    q.stdout])
    s.run("scancel", a, dep, r)
    return {"update": out}


def c_scancel(s):
    jid = s.sbatch("--wrap", "sleep 60")
    s.running(jid)
    p = s.run("scancel", jid)
    st = s.final(jid)
    q = s.run("scancel")
    return {"rc": p.returncode, "state": st[1].split()[0],
            "by": bool(re.fullmatch(r"CANCELLED by \d+", st[1])),
            "exit": st[2], "none": [q.returncode, q.stderr]}


def c_scancel_filters(s):
    a = s.sbatch("-H", "-J", "filt", "--wrap", "true")
    b = s.sbatch("-H", "-J", "other", "--wrap", "true")
    p = s.run("scancel", "-n", "filt", "-t", "PENDING")
    s.final(a)
    left = s.run("squeue", "-h", "-j", b, "-o", "%T").stdout
    s.run("scancel", b)
    return {"rc": p.returncode, "a": s.final(a)[1].split()[0], "b": left}


def c_scancel_signal(s):
    """--signal to a job's steps (an srun in its script), -b to the
    script.  (Of a pending job: Slurm's scancel may retry for a minute.)"""
    jid = s.sbatch("-o", "sig-%j.out", "--wrap",
                   "trap 'echo batch got USR2; exit 0' USR2; "
                   "srun sh -c 'trap \"echo step got USR1; exit 0\" USR1; "
                   "sleep 120 & wait'; sleep 120 & wait")
    s.running(jid)
    time.sleep(3)  # the step starts
    p = s.run("scancel", "--signal=USR1", jid)
    time.sleep(1)
    q = s.run("scancel", "-b", "--signal=USR2", jid)
    f = s.final(jid)
    return {"rc": [p.returncode, q.returncode], "state": f[1:],
            "out": open(os.path.join(s.cwd, "sig-%s.out" % jid)).read()}


def c_wait(s):
    p = s.run("sbatch", "-W", "--wrap", "exit 4")
    return {"rc": p.returncode}


def c_wrap_args(s):
    p = s.run("sbatch", "--wrap", "true", "extra")
    return {"rc": p.returncode}


def c_chdir(s):
    os.makedirs(os.path.join(s.cwd, "sub"), exist_ok=True)
    jid = s.sbatch("-D", "sub", "--wrap", "pwd; echo $SLURM_SUBMIT_DIR")
    s.final(jid)
    path = os.path.join(s.cwd, "sub", "slurm-%s.out" % jid)
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    return {"lines": ["cwd" if x == s.cwd else os.path.basename(x)
                      for x in lines]}


def c_export_none(s):
    env = dict(s.env, ALLOT_CONF_TEST_VAR="x", CONF_TEST_VAR="yes")
    p = subprocess.run(["sbatch", "--parsable", "--export=NONE,KEEP=1",
                        "--wrap", "echo [$CONF_TEST_VAR] [$KEEP]"],
                       capture_output=True, text=True, env=env, cwd=s.cwd)
    jid = p.stdout.strip()
    s.final(jid)
    return {"out": open(os.path.join(s.cwd, "slurm-%s.out" % jid)).read()}


def c_export_all(s):
    env = dict(s.env, CONF_TEST_VAR="yes")
    p = subprocess.run(["sbatch", "--parsable", "--wrap",
                        "echo [$CONF_TEST_VAR]"],
                       capture_output=True, text=True, env=env, cwd=s.cwd)
    jid = p.stdout.strip()
    s.final(jid)
    return {"out": open(os.path.join(s.cwd, "slurm-%s.out" % jid)).read()}


def c_sacctmgr(s):
    p = s.run("sacctmgr", "-n", "-s", "list", "user", s.user,
              "format=account")
    return {"rc": p.returncode, "shape": bool(re.fullmatch(
        r"(\s*\S+\s*\n)+", p.stdout))}


def node_word(text):
    """Node names in srun's messages, abstracted."""
    return re.sub(r"error: [\w.-]+: task", "error: NODE: task", text)


def c_srun(s):
    p = s.run("srun", "sh", "-c", "echo out; exit 3")
    return {"rc": p.returncode, "stdout": p.stdout,
            "stderr": node_word(p.stderr.splitlines()[-1])
            if p.stderr else None}


def c_srun_label(s):
    p = s.run("srun", "-n", "2", "-l", "sh", "-c",
              "echo $SLURM_PROCID/$SLURM_NTASKS $SLURM_STEP_ID")
    return {"rc": p.returncode, "lines": sorted(p.stdout.splitlines())}


def c_srun_stdin(s):
    p = s.run("srun", "cat", stdin="through stdin\n")
    return {"rc": p.returncode, "stdout": p.stdout}


def c_srun_errors(s):
    a = s.run("srun", "--no-such-option", "true")
    b = s.run("srun")
    c = s.run("srun", "-p", "nosuchpart", "true")
    return {"rc": [a.returncode, b.returncode, c.returncode],
            "stderr": [a.stderr.splitlines()[:1], b.stderr,
                       c.stderr.splitlines()[-1:]]}


def c_srun_batch(s):
    """srun in a batch script of two tasks: a step of both, then one."""
    jid = s.sbatch("-n", "2", "-o", "steps-%j.out", "--wrap",
                   "srun -l sh -c 'echo $SLURM_PROCID $SLURM_STEP_ID'; "
                   "srun -n1 sh -c 'echo one $SLURM_STEP_ID'")
    s.final(jid)
    text = open(os.path.join(s.cwd, "steps-%s.out" % jid)).read()
    # (Slurm's srun may say that it waits for the step's resources.)
    return {"lines": sorted(x for x in text.splitlines()
                            if not x.startswith("srun: "))}


def c_sacct_steps(s):
    """srun's steps in sacct: ID.batch, then ID.0, ID.1, ... with their
    command, state and exit code; a step its job's cancel stopped."""
    jid = s.sbatch("-n", "2", "-o", "/dev/null", "--wrap",
                   "srun hostname; srun -n1 sh -c 'exit 3'; srun -n1 true")
    s.final(jid)
    k = s.sbatch("-o", "/dev/null", "--wrap", "srun sleep 60")
    end = time.monotonic() + 60
    while time.monotonic() < end and "%s.0|RUNNING" % k not in s.run(
            "sacct", "-P", "-n", "-j", k, "-o", "JobID,State").stdout:
        time.sleep(0.2)
    s.run("scancel", k)
    s.final(k)
    out = {}
    for name, j in (("steps", jid), ("cancelled", k)):
        p = s.run("sacct", "-P", "-n", "-j", j, "-o",
                  "JobID,JobName,State,ExitCode")
        out[name] = [re.sub(r"^\d+", "ID", re.sub(r" by \d+", "", x))
                     for x in p.stdout.splitlines()]
    p = s.run("sacct", "-j", jid, "-o", "JobID,JobName,State,ExitCode")
    out["layout"] = [re.sub(r"^\d+", "ID", x).rstrip()
                     for x in p.stdout.splitlines()]
    return out


def c_batch_tasks(s):
    """What a batch script of two tasks runs outside srun."""
    jid = s.sbatch("-n", "2", "-o", "outside-%j.out", "--wrap",
                   "echo outside")
    s.final(jid)
    return {"lines": open(os.path.join(s.cwd, "outside-%s.out" % jid))
            .read().splitlines()}


def c_salloc(s):
    p = s.run("salloc", "-n", "2", "sh", "-c",
              "echo $SLURM_JOB_NAME $SLURM_NTASKS $SLURM_NNODES; "
              "srun -l sh -c 'echo $SLURM_PROCID $SLURM_STEP_ID'; exit 5")
    m = re.search(r"Granted job allocation (\d+)", p.stderr)
    f = s.final(m.group(1)) if m else None
    return {"rc": p.returncode, "lines": sorted(p.stdout.splitlines()),
            # (Slurm may add "Job allocation N has been revoked." when
            # the job ended first.)
            "stderr": [re.sub(r"\d+", "N", x) for x in p.stderr.splitlines()
                       if "Granted" in x or "Relinquishing" in x],
            "state": f[1:] if f else None}


def c_salloc_errors(s):
    a = s.run("salloc", "--no-such-option", "true")
    b = s.run("salloc", "-p", "nosuchpart", "true")
    return {"rc": [a.returncode, b.returncode],
            "stderr": [a.stderr.splitlines()[:1], b.stderr.splitlines()[-1:]]}


def c_signal_batch(s):
    """A checkpoint handler: --signal=B:USR1@65 with a limit of 70 s
    (Slurm sends it up to a minute early; allot on time)."""
    with open(os.path.join(s.cwd, "ckpt.sh"), "w") as f:
        f.write("#!/bin/bash\n#SBATCH -t 1:10\n#SBATCH --signal=B:USR1@65\n"
                "trap 'echo got USR1; exit 0' USR1\n"
                "echo start\nsleep 120 & wait\necho never\n")
    jid = s.sbatch("-o", "ckpt-%j.out", "ckpt.sh")
    f = s.final(jid, timeout=120)
    text = open(os.path.join(s.cwd, "ckpt-%s.out" % jid)).read()
    # Slurm's slurmstepd may add a line of its own (SIGCONT to a step
    # that is gone).
    return {"state": f[1:], "out": [x for x in text.splitlines()
                                    if not x.startswith("slurmstepd")]}


def c_signal_bad(s):
    p = s.run("sbatch", "--signal=NOSUCH@60", "--wrap", "true")
    return {"rc": p.returncode, "stderr": p.stderr}


# (flag, case, verdict, why).  verdict: same | differs | refused.  The
# allot half of a `same` case must equal what Slurm 22.05 gives (EXPECT);
# `differs` and `refused` cases check allot against EXPECT_ALLOT.
CASES = [
    ("sbatch --parsable", c_parsable, "same", ""),
    ("sbatch (Submitted batch job N)", c_submitted, "same", ""),
    ("sbatch unknown option", c_unknown_option, "same", ""),
    ("sbatch script without #!", c_no_shebang, "same", ""),
    ("sbatch empty script on stdin", c_empty, "same", ""),
    ("sbatch -p PARTITION (unknown)", c_bad_partition, "same",
     "a partition is a node pool; `allot` holds every node"),
    ("sbatch -t (malformed)", c_bad_time, "same", ""),
    ("sbatch --wrap with script arguments", c_wrap_args, "same", ""),
    ("sbatch --array", c_array, "same", ""),
    ("sbatch --dependency", c_dependency, "same", ""),
    ("#SBATCH --array in a script", c_script_array, "same", ""),
    ("an array in squeue (-r) and sacct", c_array_listing, "same",
     "an element's JobIDRaw is its own id"),
    ("sbatch --signal=B:SIG@TIME", c_signal_batch, "same",
     "Slurm sends it up to a minute early, allot at TIME"),
    ("sbatch --signal (malformed)", c_signal_bad, "same", ""),
    ("sbatch -W/--wait", c_wait, "same", "exit status of the job"),
    ("sbatch -D", c_chdir, "same", ""),
    ("sbatch --export=NONE,VAR=V", c_export_none, "same",
     "the agent's own environment still reaches the job"),
    ("sbatch --export=ALL (default)", c_export_all, "same", ""),
    ("sbatch -o with %j %x %a %%", c_output_pattern, "same", ""),
    ("sbatch default output slurm-%j.out", c_default_output, "same", ""),
    ("sbatch -o/-e apart", c_error_file, "same", ""),
    ("job's Slurm variables", c_env, "differs",
     "allot sets SLURM_NTASKS and SLURM_NPROCS without -n too; "
     "SLURM_JOB_ACCOUNT is the queue"),
    ("sbatch -n 2: SLURM_NTASKS, hostlist", c_ntasks_env, "same", ""),
    ("exit codes code:signal in sacct", c_exit_codes, "same", ""),
    ("squeue (default layout)", c_squeue_default, "same", ""),
    ("squeue -l", c_squeue_long, "same", ""),
    ("squeue -o/-O fields, widths", c_squeue_format, "same", ""),
    ("squeue -t -n filters, %r reason", c_squeue_states, "same", ""),
    ("squeue %r Resources (GPUs held)", c_squeue_resources, "same", ""),
    ("squeue -j unknown id", c_squeue_badjob, "same", ""),
    ("squeue unknown option", c_squeue_unknown, "same", ""),
    ("sacct -P -o (17 fields), steps", c_sacct_parsable, "same", ""),
    ("sacct (default layout)", c_sacct_default, "same", ""),
    ("sacct -o F%N widths, -p --delimiter", c_sacct_widths, "same", ""),
    ("sacct -o unknown field", c_sacct_unknown_field, "same", ""),
    ("sacct --json", c_sacct_json, "same", "a subset of Slurm's members"),
    ("sinfo (default, -N, -s, -o)", c_sinfo, "same", ""),
    ("scontrol show job", c_scontrol_show, "same",
     "fewer keys than Slurm's; JobState, Reason, NodeList and the "
     "other keys tools read are there"),
    ("scontrol show job/hold unknown id", c_scontrol_badjob, "same", ""),
    ("scontrol hold/release", c_hold_release, "same", ""),
    ("scontrol requeue", c_scontrol_requeue, "same",
     "an ended batch job is requeued unless --no-requeue (JobRequeue=1)"),
    ("scontrol update TimeLimit=+T/-T, JobId=A,B", c_scontrol_update,
     "same", ""),
    ("scontrol update Priority=, Nice=", c_scontrol_priority, "same",
     "a job's own priority orders it within its queue and class"),
    ("scontrol update NumNodes=", c_scontrol_numnodes, "same",
     "a waiting job's tasks become NumNodes times its tasks per node"),
    ("scancel ID; CANCELLED by UID", c_scancel, "same", ""),
    ("scancel -n -t", c_scancel_filters, "same", ""),
    ("scancel --signal, -b", c_scancel_signal, "same",
     "through the controller, beside each task"),
    ("sacctmgr -n -s list user NAME format=account", c_sacctmgr, "same",
     "accounts are allot's leaf queues"),
    ("srun (exit status, error line)", c_srun, "same", ""),
    ("srun -n 2 -l", c_srun_label, "same", ""),
    ("srun with stdin", c_srun_stdin, "same", ""),
    ("srun unknown option, no command, -p unknown", c_srun_errors, "same",
     ""),
    ("srun in a batch script (steps)", c_srun_batch, "same", ""),
    ("sacct of srun's steps (ID.0, ID.1)", c_sacct_steps, "same",
     "srun reaches the controller with the user's config file, or the "
     "job's own token"),
    ("sbatch -n 2: a command outside srun", c_batch_tasks, "differs",
     "allot runs the script once per task, Slurm once"),
    ("salloc CMD (srun inside, release, state)", c_salloc, "same", ""),
    ("salloc unknown option, -p unknown", c_salloc_errors, "same", ""),
]

# What allot must give where it differs from or refuses what Slurm does.
EXPECT_ALLOT = {
    "sbatch -n 2: a command outside srun": {"lines": ["outside",
                                                      "outside"]},
}

# What Slurm 22.05 gives (recorded from the peer), for the allot half when
# the peer is not up: the keys listed must be equal.
EXPECT = {
    "sbatch --parsable": {"rc": 0, "stdout": "N\n"},
    "sbatch (Submitted batch job N)": {"rc": 0,
                                       "stdout": "Submitted batch job N\n"},
    "sbatch unknown option": {
        "rc": 255, "stderr": ["sbatch: unrecognized option "
                              "'--no-such-option'"]},
    "sbatch script without #!": {
        "rc": 1, "stderr":
        "sbatch: error: This does not look like a batch script.  The first\n"
        "sbatch: error: line must start with #! followed by the path to an "
        "interpreter.\nsbatch: error: For instance: #!/bin/sh\n"},
    "sbatch empty script on stdin": {
        "rc": 1, "stderr": "sbatch: error: Batch script is empty!\n"},
    "sbatch -p PARTITION (unknown)": {
        "rc": 1, "stderr": ["sbatch: error: Batch job submission failed: "
                            "Invalid partition name specified"]},
    "sbatch -t (malformed)": {"rc": 255},
    "sbatch --array": {"rc": 0, "files": ["1\n", "2\n"]},
    "sbatch --dependency": {"b": "COMPLETED"},
    "#SBATCH --array in a script": {"rc": 0, "stderr": "",
                                    "stdout": "Submitted batch job N\n"},
    "sbatch --wrap with script arguments": {"rc": 1},
    "sbatch -W/--wait": {"rc": 4},
    "sbatch -D": {"lines": ["sub", "cwd"]},
    "sbatch --export=NONE,VAR=V": {"out": "[] [1]\n"},
    "sbatch --export=ALL (default)": {"out": "[yes]\n"},
    "sbatch -o with %j %x %a %%": {"file": "out\nerr\n"},
    "sbatch default output slurm-%j.out": {"file": "hello\n"},
    "sbatch -o/-e apart": {"out": "out\n", "err": "err\n"},
    "sbatch -n 2: SLURM_NTASKS, hostlist": {"ntasks": "2",
                                              "hostlist": True},
    "exit codes code:signal in sacct": {
        "states": [["COMPLETED", "0:0"], ["FAILED", "3:0"],
                   ["FAILED", "0:9"]]},
    "squeue (default layout)": {
        "rc": 0,
        "header": "             JOBID PARTITION     NAME     USER ST       "
                  "TIME  NODES NODELIST(REASON)",
        "line": [(47, 49), (56, 60), (66, 67)],
        "words": ["heldjob", "PD", "0:00", "1", "(JobHeldUser)"]},
    "squeue -l": {
        "rc": 0, "date": True, "state": "PENDING",
        "header": "             JOBID PARTITION     NAME     USER    STATE  "
                  "     TIME TIME_LIMI  NODES NODELIST(REASON)"},
    "squeue -o/-O fields, widths": {
        "lines": ["JOBID|NAME|ST|STATE|TIME|TIME_LIMIT|NODES|"
                  "NODELIST(REASON)|CPUS",
                  "ID|heldjob|PD|PENDING|0:00|UNLIMITED|1|(JobHeldUser)|1"],
        "widths": ["JOBID NAME       %-8T", " xxxxxxx    xxxx"],
        "O": "xxxxxxx             xxxxxxx             "},
    "squeue -t -n filters, %r reason": {"pd": ["PENDING JobHeldUser"],
                                         "r": ""},
    "squeue %r Resources (GPUs held)": {"reason": "PD Resources\n"},
    "squeue -j unknown id": {
        "rc": 1, "stderr": "slurm_load_jobs error: Invalid job id "
                           "specified\n"},
    "squeue unknown option": {
        "rc": 1, "stderr": ["squeue: unrecognized option "
                            "'--no-such-option'"]},
    "sacct -P -o (17 fields), steps": {
        "rc": 0, "header": SACCT_FIELDS.replace(",", "|"),
        "nfields": [17, 17, 17],
        "job": [True, "FAILED", "3:0", True, True, True, True],
        "steps": ["ID", "ID.batch"]},
    "sacct (default layout)": {
        "rc": 0,
        "header": ["JobID           JobName  Partition    Account  AllocCPUS "
                   "     State ExitCode ",
                   "------------ ---------- ---------- ---------- ---------- "
                   "---------- -------- "],
        "line": [77, True, ["COMPLETED", "0:0"]]},
    "sacct -o F%N widths, -p --delimiter": {
        "header": ["               JobID State Job ",
                   "-------------------- ----- --- "],
        "line": " xxxxx xxx ",
        "cut": ["COMP+"], "p": "ID,COMPLETED,\n"},
    "sacct -o unknown field": {"rc": 1},
    "sacct --json": {"rc": 0, "job_id": True, "state": "FAILED"},
    "sinfo (default, -N, -s, -o)": {
        "header": "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "first": True, "N": "NODELIST   NODES PARTITION STATE ",
        "s": "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST",
        "o": "P*|up|infinite|D|state|gpu:G"},
    "scontrol show job": {
        "rc": 0, "first": "JobId=N JobName=heldjob",
        "keys": ["JobId", "JobName", "UserId", "JobState", "Reason",
                 "ExitCode", "RunTime", "TimeLimit", "SubmitTime",
                 "StartTime", "EndTime", "Partition", "NodeList",
                 "NumNodes", "NumCPUs", "NumTasks", "WorkDir"],
        "state": [["PENDING", "JobHeldUser"]]},
    "scontrol show job/hold unknown id": {
        "rc": [1, 1],
        "stderr": ["slurm_load_jobs error: Invalid job id specified\n",
                   "Invalid job id specified for job 999999\n"
                   "slurm_suspend error: Invalid job id specified\n"]},
    "scontrol hold/release": {"held": "PENDING JobHeldUser\n",
                              "after": "COMPLETED"},
    "scontrol update TimeLimit=+T/-T, JobId=A,B": {"update": [
        [0, "", ["35:00", "30:00"]], [0, "", ["25:00", "30:00"]],
        [0, "", ["UNLIMITED", "30:00"]], [0, "", ["30:00", "30:00"]],
        [0, "", ["20:00", "20:00"]],
        [1, "scontrol: error: Invalid job ID N,N\n", ["20:00", "20:00"]],
        [1, "scontrol: error: TimeLimit decrement larger than current time "
            "limit (N > N)\n", ["20:00", "20:00"]]]},
    "scontrol update Priority=, Nice=": {"update": [
        ["Nice=10", 0, "", "10\n"], ["Nice=-5", 0, "", "-5\n"],
        ["Nice=abc", 0, "", "0\n"],
        ["Nice=3000000000", 1, "scontrol: error: Nice value out of range "
         "(+/- N). Value ignored\n", "0\n"],
        ["Priority=abc", 1, "scontrol: error: Invalid Priority value: abc\n",
         "0\n"],
        ["Priority=4294967294", 1, "scontrol: error: Invalid Priority "
         "value: N\n", "0\n"],
        ["Priority=100", 0, "", "100 0\n"], ["Nice=10", 0, "", "100 0\n"],
        ["Priority=0", 0, "", "PENDING 0\n"],
        ["Priority=7", 1, "Job is in held state, pending scheduler release "
         "for job N\n", "PENDING 0\n"]]},
    "scontrol update NumNodes=": {"update": [
        ["NumNodes=1", 0, "", "1\n"],
        ["NumNodes=0", 1, "Node count specification invalid for job N\n",
         "1\n"],
        ["NumNodes=1", 0, "", "1\n"],
        ["NumNodes=2", 1, "Requested operation not supported on this "
         "system for job N\n", "1\n"]]},
    "scancel ID; CANCELLED by UID": {
        "rc": 0, "state": "CANCELLED", "by": True, "exit": "0:0",
        "none": [1, "scancel: error: No job identification provided\n"]},
    "scancel -n -t": {"rc": 0, "a": "CANCELLED", "b": "PENDING\n"},
    "sacctmgr -n -s list user NAME format=account": {"rc": 0,
                                                      "shape": True},
    "scontrol requeue": {"requeue": [
        [0, ""], [1, "Job is pending execution for job N\n"],
        [1, "Requested operation is presently disabled for job N\n"],
        [1, "Invalid job id specified for job N\n"]]},
    "an array in squeue (-r) and sacct": {
        "squeue": "ID_[0-3,7] ID 0-3,7 PENDING JobHeldUser\n",
        "r": "ID_0\nID_1\nID_2\nID_3\nID_7\n",
        "sacct": ["ID_0|COMPLETED", "ID_1|COMPLETED", "ID_2|COMPLETED"]},
    "sbatch --signal=B:SIG@TIME": {"state": ["COMPLETED", "0:0"],
                                   "out": ["start", "got USR1"]},
    "sbatch --signal (malformed)": {
        "rc": 255, "stderr": "sbatch: error: Invalid --signal "
                             "specification\n"},
    "scancel --signal, -b": {"rc": [0, 0], "state": ["COMPLETED", "0:0"],
                             "out": "step got USR1\nbatch got USR2\n"},
    "srun (exit status, error line)": {
        "rc": 3, "stdout": "out\n",
        "stderr": "srun: error: NODE: task 0: Exited with exit code 3"},
    "srun -n 2 -l": {"rc": 0, "lines": ["0: 0/2 0", "1: 1/2 0"]},
    "srun with stdin": {"rc": 0, "stdout": "through stdin\n"},
    "srun unknown option, no command, -p unknown": {
        "rc": [255, 1, 1],
        "stderr": [["srun: unrecognized option '--no-such-option'"],
                   "srun: fatal: No command given to execute.\n",
                   ["srun: error: Unable to allocate resources: Invalid "
                    "partition name specified"]]},
    "sacct of srun's steps (ID.0, ID.1)": {
        "steps": ["ID|wrap|COMPLETED|0:0", "ID.batch|batch|COMPLETED|0:0",
                  "ID.0|hostname|COMPLETED|0:0", "ID.1|sh|FAILED|3:0",
                  "ID.2|true|COMPLETED|0:0"],
        "cancelled": ["ID|wrap|CANCELLED|0:0",
                      "ID.batch|batch|CANCELLED|0:15",
                      "ID.0|sleep|CANCELLED|0:15"],
        "layout": ["JobID           JobName      State ExitCode",
                   "------------ ---------- ---------- --------",
                   "ID                 wrap  COMPLETED      0:0",
                   "ID.batch          batch  COMPLETED      0:0",
                   "ID.0           hostname  COMPLETED      0:0",
                   "ID.1                 sh     FAILED      3:0",
                   "ID.2               true  COMPLETED      0:0"]},
    "srun in a batch script (steps)": {"lines": ["0: 0 0", "1: 1 0",
                                                 "one 1"]},
    "salloc CMD (srun inside, release, state)": {
        "rc": 5, "lines": ["0: 0 0", "1: 1 0", "interactive 2 1"],
        "stderr": ["salloc: Granted job allocation N",
                   "salloc: Relinquishing job allocation N"],
        "state": ["FAILED", "5:0"]},
    "salloc unknown option, -p unknown": {
        "rc": [255, 1],
        "stderr": [["salloc: unrecognized option '--no-such-option'"],
                   ["salloc: error: Job submit/allocate failed: Invalid "
                    "partition name specified"]]},
}


def table():
    rows = ["| command line | verdict | why |", "|---|---|---|"]
    for flag, _, verdict, why in CASES:
        rows.append("| `%s` | %s | %s |" % (flag.replace("|", "\\|"),
                                          verdict, why))
    return "\n".join(rows) + "\n"


BEGIN = "<!-- conformance table: made by tests/slurm/conformance.py -->\n"
END = "<!-- end of the conformance table -->\n"


def check_doc(path, write):
    text = open(path).read() if os.path.exists(path) else ""
    want = BEGIN + table() + END
    if BEGIN in text and END in text:
        new = text[:text.index(BEGIN)] + want + \
            text[text.index(END) + len(END):]
    else:
        new = text + "\n" + want
    if write:
        open(path, "w").write(new)
        return None
    if new != text:
        return "%s: the conformance table is not the suite's (run " \
               "tests/slurm/conformance.py ALLOT %s --write-doc)" % (path,
                                                                    path)
    return None


def peer_side(tmp):
    if not os.path.exists(PEER_ENV) or shutil.which("sbatch", path="/usr/bin") \
            is None:
        return None
    env = dict(os.environ)
    for line in open(PEER_ENV):
        m = re.match(r"export (\w+)=(.*)", line.strip())
        if m:
            env[m.group(1)] = m.group(2)
    env["PATH"] = "/usr/bin:/bin:/usr/sbin:/sbin"
    cwd = os.path.join(tmp, "slurm")
    os.makedirs(cwd)
    s = Side("slurm", env, cwd)
    try:
        if s.run("sinfo", "-h").returncode != 0:
            return None
        if s.run("sacct", "-n", "-X").returncode != 0:
            return None  # no accounting (slurmdbd): nothing to compare
    except (OSError, subprocess.TimeoutExpired):
        return None
    s.user = "root" if os.getuid() == 0 else os.environ.get("USER", "")
    s.nodes = len(s.run("sinfo", "-h", "-N", "-o", "%N").stdout.split())
    return s


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    allot = os.path.abspath(sys.argv[1])
    doc = sys.argv[2]
    if "--write-doc" in sys.argv:
        check_doc(doc, True)
        print("wrote the table in %s" % doc)
        return 0
    root = tempfile.mkdtemp(prefix="allot-slurm-conf-")
    c = e2e.Cluster(allot, root)
    failures = []
    try:
        c.start_server()
        c.start_agent("node1", gpus="8xH100-80GB")
        c.start_agent("node2", gpus="8xH100-80GB")
        # Jobs of a user named as the Unix user running this, as on a
        # cluster (CANCELLED by UID, %u): a token for that user.
        me = "root" if os.getuid() == 0 else os.environ.get("USER", "admin")
        st, tok = c.api("POST", "/v1/tokens", {"user": me, "role": "admin"})
        check(st in (200, 201), "token for %s: %s %s" % (me, st, tok))
        c.env["ALLOT_TOKEN"] = tok["token"]
        # The user's config file in HOME, as a home the nodes share holds
        # it: srun inside a batch script reads it to record its steps.
        cfg = os.path.join(c.root, ".config", "allot")
        os.makedirs(cfg, exist_ok=True)
        with open(os.path.join(cfg, "config"), "w") as f:
            f.write("server = %s\ntoken = %s\n" % (c.url, tok["token"]))
        bindir = os.path.join(root, "bin")
        os.makedirs(bindir)
        c.cli("slurm-commands", bindir)
        env = dict(c.env)
        env["PATH"] = bindir + ":" + env.get("PATH", "/usr/bin:/bin")
        for k in list(env):
            if k.startswith("SLURM_"):
                del env[k]
        cwd = os.path.join(root, "allot")
        os.makedirs(cwd)
        mine = Side("allot", env, cwd)
        mine.user = me
        mine.nodes = 2
        peer = peer_side(root)
        print("peer: %s" % ("up, comparing" if peer else
                            "not up; allot against recorded Slurm output"))
        for flag, fn, verdict, why in CASES:
            try:
                got = fn(mine)
            except Fail as e:
                failures.append("%s: allot: %s" % (flag, e))
                continue
            except Exception as e:  # an index error is a wrong shape
                failures.append("%s: allot: %r" % (flag, e))
                continue
            ref = None
            if peer is not None:
                try:
                    ref = fn(peer)
                except Exception as e:
                    failures.append("%s: slurm: %r" % (flag, e))
            want = EXPECT_ALLOT.get(flag) if verdict != "same" else \
                EXPECT.get(flag)
            for k, v in (want or {}).items():
                if got.get(k) != v:
                    failures.append("%s: allot %s = %r, want %r%s" % (
                        flag, k, got.get(k), v,
                        "\n" + got["_out"] if "_out" in got else ""))
            if ref is not None and verdict == "same":
                for k in ref:
                    if k.startswith("_"):
                        continue
                    a, b = got.get(k), ref.get(k)
                    if k == "words" and a and b:  # user names differ
                        a = [x for x in a if x not in ("admin", "root")]
                        b = [x for x in b if x not in ("admin", "root")]
                    if a != b:
                        failures.append("%s: %s: allot %r, slurm %r" % (
                            flag, k, a, b))
            if ref is not None and verdict != "same":
                print("  %s: slurm gives %r; allot %r (%s)" % (
                    flag, ref, got, verdict))
            if ref is not None and verdict == "differs":
                diff = {k: (got.get(k), ref.get(k)) for k in ref
                        if got.get(k) != ref.get(k)}
                print("    differs in: %r" % diff)
        err = check_doc(doc, False)
        if err:
            failures.append(err)
    finally:
        bad = c.stop()
    failures += bad
    if failures:
        print("FAIL slurm conformance:\n  " + "\n  ".join(failures),
              file=sys.stderr)
        print("logs kept in %s" % root, file=sys.stderr)
        return 1
    shutil.rmtree(root, ignore_errors=True)
    print("ok slurm conformance (%d cases%s)" % (
        len(CASES), ", compared with Slurm" if peer else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
