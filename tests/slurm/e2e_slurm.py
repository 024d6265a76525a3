#!/usr/bin/env python3
"""Slurm job scripts and interactive commands on allot, end to end: a real
`allot server` with two agents on loopback, Slurm's command names linked
by `allot slurm-commands`, and scripts of the kinds people write, run
unchanged.  Runs on tests/server/e2e.py's harness.

Usage: e2e_slurm.py SCENARIO PATH/TO/allot

Scenarios:
  srun        srun outside a job: output, exit status, -n/-l, stdin, --pty
  srun_batch  srun inside a batch script: its steps, their variables
  salloc      an allocation, srun inside it, its release and end state
  signal      --signal=B:USR1@TIME checkpoint handlers, scancel --signal
  scripts     arrays with %a files, a torchrun-style launcher from
              SLURM_JOB_NODELIST, an afternotok cleanup chain, a refused
              script, the tool-style sacct loop
  partitions  partitions as node pools, -C features as node labels
  requeue     scontrol requeue, requeuehold, and what cannot be requeued
  steps       srun's steps in sacct (ID.0, ID.1), kept across a restart
  update      scontrol update JobId=N of a waiting and a running job
  requeue_ended  scontrol requeue of an ended batch job
  priority    scontrol update Priority=, Nice=: the order they give, who may
  num_nodes   scontrol update NumNodes=: a waiting job's tasks, what is refused
  job_token   a job's own token: srun's steps without the user's config,
              what it may do, when it ends, where it never shows
  list_nospec GET /v1/jobs?spec=0, squeue's listing without jobs' specs
  update_forms  scontrol update TimeLimit=+T/-T, unlimited, JobId=A,B,
              a running job renamed
  requeue_refused  scontrol requeue of a running --no-requeue or srun job
  steps_select  sacct -j ID.STEP, Elapsed of steps, --json step ids, a step
              across a restart of the controller
"""
import os
import pty
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "server"))
import e2e  # noqa: E402
from e2e import Fail, check, wait_for  # noqa: E402

FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")


class Slurm:
    """Slurm's commands on the cluster, in a working directory."""

    def __init__(self, c, node2=()):
        c.start_server()
        c.start_agent("node1", gpus="8xH100-80GB")
        c.start_agent("node2", gpus="8xH100-80GB", extra=list(node2))
        me = "root" if os.getuid() == 0 else os.environ.get("USER", "admin")
        st, tok = c.api("POST", "/v1/tokens", {"user": me, "role": "admin"})
        check(st in (200, 201), "token: %s %s" % (st, tok))
        bindir = os.path.join(c.root, "bin")
        os.makedirs(bindir)
        c.cli("slurm-commands", bindir)
        self.env = dict(c.env, ALLOT_TOKEN=tok["token"])
        self.env["PATH"] = bindir + ":" + self.env.get("PATH", "/usr/bin:/bin")
        for k in list(self.env):
            if k.startswith("SLURM_"):
                del self.env[k]
        self.cwd = os.path.join(c.root, "work")
        os.makedirs(self.cwd)
        self.c = c

    def run(self, *args, stdin=None, timeout=90, env=None):
        return subprocess.run(list(args), capture_output=True, text=True,
                              env=dict(self.env, **(env or {})),
                              cwd=self.cwd, input=stdin, timeout=timeout)

    def sh(self, text, **kw):
        return self.run("sh", "-c", text, **kw)

    def write(self, name, text):
        path = os.path.join(self.cwd, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def read(self, name):
        path = os.path.join(self.cwd, name)
        wait_for(lambda: os.path.exists(path), 30, name)
        return open(path).read()

    def sbatch(self, *args):
        p = self.run("sbatch", "--parsable", *args)
        check(p.returncode == 0 and re.fullmatch(r"\d+\n", p.stdout),
              "sbatch %s: %d %r %r" % (args, p.returncode, p.stdout,
                                       p.stderr))
        return p.stdout.strip()

    def final(self, jid, timeout=90):
        """A tool's loop: sacct -P -n until a final state."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self.run("sacct", "-P", "-n", "-X",
                         "--format=JobIdRaw,State,ExitCode", "-j", jid)
            for line in p.stdout.splitlines():
                f = line.split("|")
                if f[0] == jid and f[1].split()[0] in FINAL:
                    return f
            time.sleep(0.2)
        raise Fail("job %s never reached a final state" % jid)


def scenario_srun(c):
    s = Slurm(c)
    # (What a task writes before srun is connected comes from its log,
    # where stderr is merged into stdout: the sleep keeps them apart.)
    p = s.run("srun", "sh", "-c", "sleep 1; echo out; echo err >&2; exit 3")
    check(p.returncode == 3 and p.stdout == "out\n" and
          "err\n" in p.stderr and
          re.search(r"srun: error: node\d: task 0: Exited with exit code 3",
                    p.stderr), "srun exit 3: %d %r %r" % (
                        p.returncode, p.stdout, p.stderr))
    p = s.run("srun", "-n", "2", "-l", "sh", "-c",
              "echo $SLURM_PROCID/$SLURM_NTASKS $SLURM_STEP_ID")
    check(p.returncode == 0 and sorted(p.stdout.splitlines()) ==
          ["0: 0/2 0", "1: 1/2 0"], "srun -n 2 -l: %d %r %r" % (
              p.returncode, p.stdout, p.stderr))
    p = s.run("srun", "cat", stdin="through stdin\n")
    check(p.returncode == 0 and p.stdout == "through stdin\n",
          "srun cat < stdin: %r %r" % (p.stdout, p.stderr))
    p = s.run("srun", "-J", "named", "sh", "-c", "echo $SLURM_JOB_NAME")
    check(p.stdout == "named\n", "srun -J: %r" % p.stdout)
    p = s.run("sacct", "-n", "-X", "-P", "-o", "JobName,State,ExitCode")
    check("sh|FAILED|3:0" in p.stdout.splitlines() and
          "named|COMPLETED|0:0" in p.stdout.splitlines(),
          "sacct after srun: %r" % p.stdout)
    for args, rc, text in (
            (["--nope", "true"], 255, "srun: unrecognized option '--nope'"),
            ([], 1, "srun: fatal: No command given to execute."),
            (["-p", "nosuch", "true"], 1, "Invalid partition name"),
            (["--wrap", "true"], 255, "srun: unrecognized option '--wrap'"),
            (["-o", "x.out", "true"], 1, "-o/--output is not available")):
        p = s.run("srun", *args)
        check(p.returncode == rc and text in p.stderr,
              "srun %s: %d %r" % (args, p.returncode, p.stderr))
    # --pty: a terminal on the job's side, the keys of ours.
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(s.cwd)
        os.execvpe("srun", ["srun", "--pty", "sh", "-c",
                            "tty; read x; echo got $x; exit 4"], s.env)
    out = b""
    sent = False
    end = time.monotonic() + 60
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                b = os.read(fd, 4096)
            except OSError:
                break
            if not b:
                break
            out += b
        if b"/dev/pts/" in out and not sent:
            os.write(fd, b"key\r")
            sent = True
    _, st = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    check(os.WEXITSTATUS(st) == 4 and "got key" in text and
          re.search(r"/dev/pts/\d+", text),
          "srun --pty: %d %r" % (os.WEXITSTATUS(st), text))


def scenario_srun_batch(c):
    """srun in a batch script: each srun is a step (0, 1, 2, ...); a step
    of the job's tasks runs once per task, -n1 once, -l labels; the
    script's exit status is srun's."""
    s = Slurm(c)
    s.write("steps.sh",
            "#!/bin/bash\n#SBATCH -n 2\n#SBATCH -o steps-%j.out\n"
            "srun -l sh -c 'echo step $SLURM_STEP_ID task $SLURM_PROCID "
            "of $SLURM_NTASKS'\n"
            "srun -n1 --cpu-bind=quiet sh -c 'echo once $SLURM_STEP_ID'\n"
            "srun -n 3 true || echo refused $?\n"
            "srun -l hostname\n")
    jid = s.sbatch("steps.sh")
    check(s.final(jid)[1] == "COMPLETED", "steps.sh did not complete")
    lines = s.read("steps-%s.out" % jid).splitlines()
    host = os.uname().nodename
    for want in ("0: step 0 task 0 of 2", "1: step 0 task 1 of 2",
                 "once 1", "0: " + host, "1: " + host):
        check(want in lines, "%r not in %r" % (want, lines))
    check(lines.count("once 1") == 1 and
          len([x for x in lines if x.endswith(host)]) == 2 and
          not any("cpu-bind" in x for x in lines),
          "steps.sh output: %r" % lines)
    check(any("More processors requested than permitted" in x
              for x in lines), "srun -n 3 in a job of 2: %r" % lines)
    # The script's status is its last srun's: sbatch -W gives it.
    p = s.run("sbatch", "-W", "-o", "w.out", "--wrap",
              "srun sh -c 'exit 7'")
    check(p.returncode == 7, "sbatch -W of srun exit 7: %d %r" % (
        p.returncode, p.stderr))
    check("task 0: Exited with exit code 7" in s.read("w.out"),
          "srun's message in the job's output")


def scenario_salloc(c):
    s = Slurm(c)
    s.write("inside.sh",
            "echo job=$SLURM_JOB_ID name=$SLURM_JOB_NAME "
            "ntasks=$SLURM_NTASKS nodes=$SLURM_JOB_NODELIST\n"
            "srun -l sh -c 'echo task $SLURM_PROCID step $SLURM_STEP_ID'\n"
            "srun -n1 sh -c 'echo one $SLURM_STEP_ID'\n"
            "squeue -h -j $SLURM_JOB_ID -o %T\n"
            "exit 5\n")
    p = s.run("salloc", "-n", "2", "sh", "inside.sh")
    check(p.returncode == 5, "salloc's status: %d %r %r" % (
        p.returncode, p.stdout, p.stderr))
    m = re.search(r"salloc: Granted job allocation (\d+)", p.stderr)
    check(m and "salloc: Relinquishing job allocation %s" % m.group(1) in
          p.stderr, "salloc's messages: %r" % p.stderr)
    jid = m.group(1)
    lines = p.stdout.splitlines()
    check(re.fullmatch(r"job=%s name=interactive ntasks=2 nodes=node[12]"
                       % jid, lines[0]) is not None,
          "salloc's variables: %r" % lines)
    check(sorted(lines[1:3]) == ["0: task 0 step 0", "1: task 1 step 0"] and
          lines[3] == "one 1" and lines[4] == "RUNNING",
          "srun inside salloc: %r" % lines)
    f = s.final(jid)
    check(f[1:] == ["FAILED", "5:0"], "the allocation ends with its "
          "command's status: %r" % f)
    p = s.run("sacct", "-n", "-P", "-X", "-o", "JobName", "-j", jid)
    check(p.stdout == "interactive\n", "salloc's job name: %r" % p.stdout)
    # No command: the user's shell, reading what comes on stdin.
    p = s.run("salloc", stdin="echo in $SLURM_JOB_NAME; exit 0\n",
              env={"SHELL": "/bin/sh"})
    check(p.returncode == 0 and p.stdout == "in interactive\n",
          "salloc with the user's shell: %d %r %r" % (
              p.returncode, p.stdout, p.stderr))
    jid = re.search(r"allocation (\d+)", p.stderr).group(1)
    f = s.final(jid)
    check(f[1] == "COMPLETED", "salloc's shell exit 0: %r" % f)
    p = s.run("salloc", "-p", "nosuch", "true")
    check(p.returncode == 1 and "salloc: error: Job submit/allocate failed: "
          "Invalid partition name specified" in p.stderr,
          "salloc -p nosuch: %r" % p.stderr)


def scenario_signal(c):
    s = Slurm(c)
    # A checkpoint handler: USR1 65 s before a limit of 70 s, to the
    # script itself (B:), which saves and ends.
    s.write("ckpt.sh",
            "#!/bin/bash\n#SBATCH -t 1:10\n#SBATCH --signal=B:USR1@65\n"
            "#SBATCH -o ckpt-%j.out\n"
            "trap 'echo checkpoint at $SECONDS; exit 0' USR1\n"
            "echo start\nsleep 120 & wait\necho never\n")
    a = s.sbatch("ckpt.sh")
    # Without B: the steps get it (srun passes it on), not the script.
    b = s.sbatch("-t", "1:10", "--signal=USR2@65", "-o", "steps-%j.out",
                 "--wrap", "trap 'echo script got it' USR2; "
                 "srun sh -c 'trap \"echo step got it; exit 0\" USR2; "
                 "sleep 120 & wait'; echo script done")
    # scancel --signal: to the steps by default, to the script with -b.
    d = s.sbatch("-o", "sc-%j.out", "--wrap",
                 "trap 'echo batch got USR1; exit 0' USR1; "
                 "srun sh -c 'trap \"echo step got USR2; exit 0\" USR2; "
                 "sleep 120 & wait'; sleep 120 & wait")
    h = s.sbatch("-H", "--wrap", "true")
    wait_for(lambda: "R" == s.run("squeue", "-h", "-j", d, "-o",
                                  "%t").stdout.strip(), 30, "job running")
    time.sleep(1)
    p = s.run("scancel", "--signal=USR2", d)
    check(p.returncode == 0, "scancel --signal=USR2: %r" % p.stderr)
    time.sleep(1)
    p = s.run("scancel", "-b", "--signal=USR1", d)
    check(p.returncode == 0, "scancel -b --signal=USR1: %r" % p.stderr)
    p = s.run("scancel", "--signal=USR1", h)
    check(p.returncode == 228 and "Job can not be altered now" in p.stderr,
          "scancel --signal of a pending job: %d %r" % (p.returncode,
                                                        p.stderr))
    s.run("scancel", h)
    for j in (a, b, d):
        check(s.final(j)[1] == "COMPLETED", "job %s did not complete" % j)
    out = s.read("ckpt-%s.out" % a).splitlines()
    check(out[0] == "start" and re.fullmatch(r"checkpoint at [4-9]|"
                                              r"checkpoint at 1\d", out[1])
          and "never" not in out, "B:USR1@65 of 1:10: %r" % out)
    check(s.read("steps-%s.out" % b).splitlines() ==
          ["step got it", "script done"], "USR2@65 without B: %r" %
          s.read("steps-%s.out" % b))
    check(s.read("sc-%s.out" % d).splitlines() ==
          ["step got USR2", "batch got USR1"],
          "scancel --signal: %r" % s.read("sc-%s.out" % d))


def scenario_scripts(c):
    """Slurm scripts of the kinds people write, unchanged."""
    s = Slurm(c)
    # An array writing %A_%a files.
    jid = s.sbatch("--array=0-3", "-o", "arr-%A_%a.out", "--wrap",
                   "echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID")
    for k in range(4):
        name = "arr-%s_%d.out" % (jid, k)
        wait_for(lambda: os.path.exists(os.path.join(s.cwd, name)) and
                 os.path.getsize(os.path.join(s.cwd, name)) > 0, 60, name)
        check(s.read(name) == "task %d of %s\n" % (k, jid),
              "%s: %r" % (name, s.read(name)))
    # squeue and sacct show an array's elements as Slurm does: ID_INDEX,
    # the pending ones folded into ID_[...] unless -r.
    held = s.sbatch("-H", "--array=0-3,7", "--wrap", "true")
    p = s.run("squeue", "-h", "-j", held, "-o", "%i %A %K %T")
    check(p.stdout == "%s_[0-3,7] %s 0-3,7 PENDING\n" % (held, held),
          "squeue of a held array: %r" % p.stdout)
    p = s.run("squeue", "-h", "-r", "-j", held, "-o", "%i")
    check(p.stdout.split() == ["%s_%d" % (held, k) for k in (0, 1, 2, 3, 7)],
          "squeue -r: %r" % p.stdout)
    s.run("scancel", held)
    p = s.run("sacct", "-n", "-X", "-P", "-o", "JobID,JobIDRaw,State", "-j",
              jid)
    rows = [x.split("|") for x in p.stdout.splitlines()]
    check([r[0] for r in rows] == ["%s_%d" % (jid, k) for k in range(4)] and
          all(r[2] == "COMPLETED" and r[1].isdigit() and r[1] != jid
              for r in rows), "sacct of an array: %r" % p.stdout)
    # A torchrun-style launcher: one process per node, its rank from
    # SLURM_NODEID, the master from the first name of the hostlist.
    launcher = s.write("launch.py",
                       "import os\n"
                       "e = os.environ\n"
                       "print('nnodes', e['SLURM_NNODES'], 'rank', "
                       "e['SLURM_NODEID'], 'of', e['SLURM_JOB_NODELIST'], "
                       "'tasks', e['SLURM_TASKS_PER_NODE'])\n")
    s.write("torch.sh",
            "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gpus-per-node=8\n#SBATCH -o torch-%%j.out\n"
            "srun python3 %s\n" % launcher)
    jid = s.sbatch("torch.sh")
    check(s.final(jid)[1] == "COMPLETED", "torch.sh")
    got = sorted(s.read("torch-%s.out" % jid).splitlines())
    check(got == ["nnodes 2 rank 0 of node[1-2] tasks 1(x2)",
                  "nnodes 2 rank 1 of node[1-2] tasks 1(x2)"],
          "torchrun-style launch: %r" % got)
    # A chain with a cleanup job that runs only when the work failed.
    work = s.sbatch("--wrap", "exit 1")
    clean = s.sbatch("--dependency=afternotok:%s" % work, "-o", "clean.out",
                     "--wrap", "echo cleaning up after %s" % work)
    skipped = s.sbatch("--dependency=afterok:%s" % work, "--wrap", "true")
    check(s.final(clean)[1] == "COMPLETED" and
          s.read("clean.out") == "cleaning up after %s\n" % work,
          "afternotok cleanup")
    # allot fails it at once, as Slurm does with --kill-on-invalid-dep;
    # sacct's Reason says why.
    check(s.final(skipped)[1] == "FAILED", "afterok of a failed job failed")
    p = s.run("sacct", "-P", "-n", "-X", "--format=Reason", "-j", skipped)
    check(p.stdout.strip() == "DependencyNeverSatisfied",
          "afterok of a failed job: %r" % p.stdout)
    s.run("scancel", skipped)
    # A script refused says which line and why.
    s.write("bad.sh", "#!/bin/bash\n#SBATCH -J ok\n#SBATCH --time=soon\n"
            "true\n")
    p = s.run("sbatch", "bad.sh")
    check(p.returncode != 0 and "bad.sh:3" in p.stderr and
          "--time" in p.stderr, "refused script: %d %r" % (p.returncode,
                                                         p.stderr))
    # The tool-style loop: --parsable, sacct until final, the -o log.
    jid = s.sbatch("-o", "tool-%j.log", "--wrap", "echo from the tool")
    f = s.final(jid)
    check(f[1:] == ["COMPLETED", "0:0"] and
          s.read("tool-%s.log" % jid) == "from the tool\n", "tool loop")


def scenario_partitions(c):
    """A partition is a node pool (the default, `allot`, holds every
    node); a feature (-C) a node label."""
    s = Slurm(c, node2=["--pool", "train", "--label", "ib=yes"])
    p = s.run("sinfo", "-h", "-o", "%P %D %N")
    check(p.stdout.splitlines() == ["allot* 2 node[1-2]", "train 1 node2"],
          "sinfo by partition: %r" % p.stdout)
    p = s.run("sinfo", "-h", "-p", "train", "-N", "-o", "%N %P")
    check(p.stdout == "node2 train\n", "sinfo -p train -N: %r" % p.stdout)
    jid = s.sbatch("-p", "train", "-o", "p-%j.out", "--wrap",
                   "echo $SLURM_JOB_PARTITION $SLURMD_NODENAME")
    c2 = s.sbatch("-C", "ib", "-o", "c-%j.out", "--wrap",
                  "echo $SLURMD_NODENAME")
    for j in (jid, c2):
        check(s.final(j)[1] == "COMPLETED", "job %s" % j)
    check(s.read("p-%s.out" % jid) == "train node2\n", "-p train ran on %r"
          % s.read("p-%s.out" % jid))
    check(s.read("c-%s.out" % c2) == "node2\n", "-C ib ran on %r" %
          s.read("c-%s.out" % c2))
    p = s.run("sacct", "-n", "-X", "-P", "-o", "JobID,Partition", "-j", jid)
    check(p.stdout == "%s|train\n" % jid, "sacct Partition: %r" % p.stdout)
    h = s.sbatch("-H", "-p", "train", "--wrap", "true")
    p = s.run("squeue", "-h", "-p", "train", "-o", "%i %P")
    check(p.stdout == "%s train\n" % h, "squeue -p train: %r" % p.stdout)
    p = s.run("scontrol", "show", "job", h)
    check("Partition=train" in p.stdout, "scontrol: %r" % p.stdout)
    s.run("scancel", "-p", "train")
    check(s.final(h)[1].startswith("CANCELLED"), "scancel -p train")
    p = s.run("srun", "-p", "train", "sh", "-c",
              "echo $SLURM_JOB_PARTITION $SLURMD_NODENAME")
    check(p.stdout == "train node2\n", "srun -p train: %r %r" % (p.stdout,
                                                                 p.stderr))
    for cmd in (["sbatch", "-p", "nosuch", "--wrap", "true"],
                ["srun", "-p", "nosuch", "true"],
                ["salloc", "-p", "nosuch", "true"]):
        p = s.run(*cmd)
        check(p.returncode == 1 and "Invalid partition name specified" in
              p.stderr, "%s: %r" % (cmd, p.stderr))
    p = s.run("sbatch", "-C", "ib|nvme", "--wrap", "true")
    check(p.returncode == 1 and "Invalid feature specification" in p.stderr,
          "-C a|b: %r" % p.stderr)
    # A drained node's reason, as Slurm shows it.
    c.cli("node", "drain", "node2", "--reason", "bad cable")
    p = s.run("scontrol", "show", "node", "node2")
    check("State=IDLE+DRAIN\n" in p.stdout and
          "   Reason=bad cable\n" in p.stdout,
          "scontrol show node of a drained node: %r" % p.stdout)
    c.cli("node", "resume", "node2")
    p = s.run("scontrol", "show", "node", "node2")
    check("Reason=" not in p.stdout, "resumed: %r" % p.stdout)


def scenario_requeue(c):
    """scontrol requeue of a running job: it runs again (its restart count
    1), appending to its output file; requeuehold leaves it held; what
    cannot be requeued is said as Slurm says it."""
    s = Slurm(c)
    jid = s.sbatch("-o", "rq-%j.out", "--wrap",
                   "echo run $SLURM_RESTART_COUNT; "
                   "[ $SLURM_RESTART_COUNT -gt 0 ] || sleep 60")
    wait_for(lambda: s.run("squeue", "-h", "-j", jid, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    wait_for(lambda: os.path.exists(os.path.join(s.cwd, "rq-%s.out" % jid)),
             30, "its output")
    p = s.run("scontrol", "requeue", jid)
    check(p.returncode == 0, "scontrol requeue: %r" % p.stderr)
    check(s.final(jid)[1] == "COMPLETED", "the requeued job completes")
    check(s.read("rq-%s.out" % jid) == "run 0\nrun 1\n",
          "its output: %r" % s.read("rq-%s.out" % jid))
    p = s.run("scontrol", "show", "job", jid)
    check("Restarts=1" in p.stdout, "Restarts: %r" % p.stdout)
    for args, text in ((["requeue", "999999"], "Invalid job id specified"),):
        p = s.run("scontrol", *args)
        check(p.returncode == 1 and text in p.stderr, "scontrol %s: %r" % (
            args, p.stderr))
    h = s.sbatch("-H", "--wrap", "true")
    p = s.run("scontrol", "requeue", h)
    check(p.returncode == 1 and "Job is pending execution" in p.stderr,
          "requeue of a pending job: %r" % p.stderr)
    s.run("scancel", h)
    k = s.sbatch("--wrap", "sleep 60")
    wait_for(lambda: s.run("squeue", "-h", "-j", k, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    p = s.run("scontrol", "requeuehold", k)
    check(p.returncode == 0, "requeuehold: %r" % p.stderr)
    p = s.run("squeue", "-h", "-j", k, "-o", "%T %r")
    check(p.stdout == "PENDING JobHeldUser\n", "after requeuehold: %r" %
          p.stdout)
    s.run("scancel", k)


def user_config(s):
    """The user's config file in the cluster's HOME, as a home shared by
    the nodes holds it: what srun inside a job reads to reach the
    controller (sbatch does not pass ALLOT_* variables on)."""
    d = os.path.join(s.c.root, ".config", "allot")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config"), "w") as f:
        f.write("server = %s\ntoken = %s\n" % (s.c.url,
                                                s.env["ALLOT_TOKEN"]))


def sacct_rows(s, jid, fmt="JobID,JobName,State,ExitCode"):
    p = s.run("sacct", "-P", "-n", "-j", jid, "-o", fmt)
    check(p.returncode == 0, "sacct -j %s: %r" % (jid, p.stderr))
    return [line.split("|") for line in p.stdout.splitlines()]


def scenario_steps(c):
    """srun's steps are recorded by the controller: sacct shows ID.batch
    and ID.0, ID.1, ... (their command, state, exit code, elapsed), as
    Slurm's does; a step of a job of two tasks is one row; they survive a
    restart of the controller; salloc's steps too; a step still running
    when its job is cancelled ends CANCELLED."""
    s = Slurm(c)
    user_config(s)
    s.write("steps.sh",
            "#!/bin/bash\n#SBATCH -n 2\n#SBATCH -o st-%j.out\n"
            "srun -l hostname\n"
            "srun -n1 sh -c 'exit 3' || echo srun said $?\n"
            "srun -n1 sleep 1\n")
    jid = s.sbatch("steps.sh")
    check(s.final(jid)[1] == "COMPLETED", "steps.sh did not complete")
    want = [[jid, "steps.sh", "COMPLETED", "0:0"],
            [jid + ".batch", "batch", "COMPLETED", "0:0"],
            [jid + ".0", "hostname", "COMPLETED", "0:0"],
            [jid + ".1", "sh", "FAILED", "3:0"],
            [jid + ".2", "sleep", "COMPLETED", "0:0"]]
    rows = sacct_rows(s, jid)
    check(rows == want, "sacct of a job with steps: %r" % rows)
    rows = sacct_rows(s, jid, "JobIDRaw,NTasks,Elapsed,Start,End")
    check([r[0] for r in rows][2:] == [jid + ".0", jid + ".1", jid + ".2"]
          and rows[2][1] == "2" and rows[3][1] == "1",
          "JobIDRaw and NTasks of the steps: %r" % rows)
    for r in rows[2:]:
        check(re.fullmatch(r"\d\d:\d\d:\d\d", r[2]) and
              re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r[3]) and
              re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r[4]),
              "a step's Elapsed, Start, End: %r" % r)
    p = s.run("sacct", "-X", "-P", "-n", "-j", jid, "-o", "JobID")
    check(p.stdout.split() == [jid], "sacct -X leaves steps out: %r" %
          p.stdout)
    # Without -j: the steps of every job listed.
    p = s.run("sacct", "-P", "-n", "-o", "JobID,JobName")
    check("%s.1|sh" % jid in p.stdout.splitlines(),
          "sacct without -j: %r" % p.stdout)
    p = s.run("sacct", "--json", "-j", jid)
    import json
    steps = json.loads(p.stdout)["jobs"][0]["steps"]
    check([x["step"]["name"] for x in steps] ==
          ["batch", "hostname", "sh", "sleep"] and
          steps[2]["state"] == "FAILED", "sacct --json steps: %r" % steps)
    # A restart of the controller keeps them.
    c.kill_server()
    c.start_server()
    wait_for(lambda: s.run("sacct", "-n", "-j", jid).returncode == 0, 30,
             "the server back")
    rows = sacct_rows(s, jid)
    check(rows == want, "steps after a restart: %r" % rows)
    # salloc's shell: its sruns are steps of the allocation.
    p = s.run("salloc", "-n", "1", "sh", "-c",
              "srun true; srun sh -c 'exit 2'; echo $SLURM_JOB_ID",
              timeout=120)
    aid = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "?"
    rows = sacct_rows(s, aid)
    check(rows[1:] == [[aid + ".0", "true", "COMPLETED", "0:0"],
                       [aid + ".1", "sh", "FAILED", "2:0"]],
          "salloc's steps: %r (%r)" % (rows, p.stderr))
    # A step still running when its job is cancelled.
    k = s.sbatch("-o", "k.out", "--wrap", "srun sleep 60")
    wait_for(lambda: [k + ".0", "sleep", "RUNNING", "0:0"] in
             sacct_rows(s, k), 60, "the step running")
    s.run("scancel", k)
    wait_for(lambda: [k + ".0", "sleep", "CANCELLED", "0:15"] in
             sacct_rows(s, k), 60, "the step cancelled")
    # A step's report for a job that is not running is refused.
    st, body = c.api("POST", "/v1/jobs/%s/steps" % k,
                     {"step": 5, "event": "start", "name": "x"})
    check(st == 409, "a step of an ended job: %s %r" % (st, body))
    st, body = c.api("POST", "/v1/jobs/%s/steps" % k,
                     {"step": -1, "event": "start"})
    check(st == 400 and "step" in body.get("message", ""),
          "a malformed step: %s %r" % (st, body))


def scenario_update(c):
    """scontrol update JobId=N: a pending job's TimeLimit, JobName,
    Partition and Dependency change; a running job's only TimeLimit, and
    a user may lower it but not raise it; the rest is refused in Slurm's
    words."""
    s = Slurm(c, node2=("--pool", "train"))
    h = s.sbatch("-H", "-t", "30", "-J", "before", "--wrap", "true")
    p = s.run("scontrol", "update", "JobId=%s" % h, "TimeLimit=10",
              "JobName=after", "Partition=train")
    check(p.returncode == 0, "update of a held job: %r" % p.stderr)
    p = s.run("squeue", "-h", "-j", h, "-o", "%j %l %P")
    check(p.stdout.split() == ["after", "10:00", "train"],
          "after the update: %r" % p.stdout)
    p = s.run("scontrol", "update", "jobid=%s" % h, "Partition=allot",
              "timelimit=1:00:00")
    check(p.returncode == 0, "update back: %r" % p.stderr)
    p = s.run("squeue", "-h", "-j", h, "-o", "%l %P")
    check(p.stdout.split() == ["1:00:00", "allot"], "back: %r" % p.stdout)
    # Dependency: the held job waits for another once released.
    d = s.sbatch("-H", "--wrap", "true")
    p = s.run("scontrol", "update", "JobId=%s" % h,
              "Dependency=afterok:%s" % d)
    check(p.returncode == 0, "update Dependency: %r" % p.stderr)
    s.run("scontrol", "release", h)
    # The reason is the next scheduling cycle's: until it ran, None.
    p = wait_for(lambda: (lambda p: p if p.stdout.strip() != "None" else
                          None)(s.run("squeue", "-h", "-j", h, "-o", "%r")),
                 10, "the released job's reason")
    check(p.stdout.strip() == "Dependency", "a dependency: %r" % p.stdout)
    p = s.run("scontrol", "update", "JobId=%s" % h, "Dependency=")
    check(p.returncode == 0, "update Dependency=: %r" % p.stderr)
    check(s.final(h)[1] == "COMPLETED", "runs once its dependency is gone")
    s.run("scancel", d)
    for args, text in (
            (["QOS=high"], "scontrol: error: Update of this parameter is "
             "not supported: QOS=high\nscontrol: error: Request aborted"),
            (["Contiguous=1"], "not supported: Contiguous=1"),
            (["TimeLimit=abc"], "scontrol: error: Invalid TimeLimit value"),
            (["Partition=nosuch"], "Invalid partition name specified"),
            ([], "scontrol: error: No changes specified")):
        p = s.run("scontrol", "update", "JobId=%s" % h, *args)
        check(p.returncode == 1 and text in p.stderr,
              "update %s: %d %r" % (args, p.returncode, p.stderr))
    p = s.run("scontrol", "update", "TimeLimit=5")
    check(p.returncode == 1 and "No job ID specified" in p.stderr,
          "update without a job: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=999999", "TimeLimit=5")
    check(p.returncode == 1 and
          p.stderr == "Invalid job id specified for job 999999\n",
          "update of no job: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=%s" % h, "TimeLimit=5")
    check(p.returncode == 1 and p.stderr == "Job has already finished for "
          "job %s\n" % h, "update of an ended job: %r" % p.stderr)
    # A running job: its time limit only; a user lowers it, an admin
    # raises it.
    st, tok = c.api("POST", "/v1/tokens", {"user": "bob", "role": "user"})
    bob = dict(ALLOT_TOKEN=tok["token"])
    p = s.run("sbatch", "--parsable", "-t", "10", "--wrap", "sleep 120",
              env=bob)
    r = p.stdout.strip()
    wait_for(lambda: s.run("squeue", "-h", "-j", r, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    p = s.run("scontrol", "update", "JobId=%s" % r, "Partition=allot")
    check(p.returncode == 1 and p.stderr == "Job is no longer pending "
          "execution for job %s\n" % r, "a running job's partition: %r" %
          p.stderr)
    p = s.run("scontrol", "update", "JobId=%s" % r, "TimeLimit=20", env=bob)
    check(p.returncode == 1 and
          p.stderr == "Access/permission denied for job %s\n" % r,
          "a user raising a limit: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=%s" % r, "TimeLimit=5", env=bob)
    check(p.returncode == 0, "a user lowering a limit: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=%s" % r, "TimeLimit=UNLIMITED",
              env=bob)
    check(p.returncode == 1 and "Access/permission denied" in p.stderr,
          "a user lifting the limit: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=%s" % r, "TimeLimit=0:03")
    check(p.returncode == 0, "an admin: %r" % p.stderr)
    # The controller ends it at its new limit (3 s after its start).
    f = s.final(r, timeout=120)
    check(f[1] == "TIMEOUT", "ends at the new limit: %r" % f)
    p = s.run("scontrol", "show", "job", r)
    check("TimeLimit=00:00:03" in p.stdout, "show job: %r" % p.stdout)


def scenario_priority(c):
    """scontrol update JobId=N Priority=P and Nice=N: waiting jobs of one
    queue start in the order they give (an admin's priority first, a
    niced job last), squeue %Q %y and scontrol show job say them; only an
    admin sets a priority or a negative nice, Priority=0 holds, a held
    job takes no priority, bad values are refused in Slurm's words."""
    s = Slurm(c)
    st, tok = c.api("POST", "/v1/tokens", {"user": "bob", "role": "user"})
    bob = dict(ALLOT_TOKEN=tok["token"])
    # Every GPU taken; three jobs of the same shape wait behind it.
    big = ("-N", "2", "--gres=gpu:8")
    blocker = s.sbatch(*big, "--wrap", "sleep 300")
    wait_for(lambda: s.run("squeue", "-h", "-j", blocker, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    a = s.sbatch(*big, "--wrap", "sleep 300")
    b = s.sbatch(*big, "--wrap", "sleep 300")
    cc = s.sbatch(*big, "--wrap", "sleep 300")
    base = s.run("squeue", "-h", "-j", a, "-o", "%Q|%y").stdout.strip()
    check(re.fullmatch(r"[1-9]\d*\|0", base), "default %%Q|%%y: %r" % base)
    for args in (["JobId=" + cc, "Priority=100000"],
                 ["JobId=" + a, "Nice=100"]):
        p = s.run("scontrol", "update", *args)
        check(p.returncode == 0 and p.stderr == "",
              "update %s: %d %r" % (args, p.returncode, p.stderr))
    p = s.run("squeue", "-h", "-j", "%s,%s" % (a, cc), "-o", "%i %Q %y")
    got = sorted(p.stdout.split("\n"))[1:]
    check(got == ["%s %d 100" % (a, max(1, int(base.split("|")[0]) - 100)),
                  "%s 100000 0" % cc], "squeue %%Q %%y: %r" % got)
    p = s.run("scontrol", "show", "job", cc)
    check("   Priority=100000 Nice=0 " in p.stdout, "show: %r" % p.stdout)
    p = s.run("scontrol", "show", "job", a)
    check("Nice=100 " in p.stdout, "show niced: %r" % p.stdout)
    # The blocker ends: the admin's priority first, then the plain one,
    # the niced one last, though it is the oldest.
    order = []
    for ended in (blocker, None, None):
        if ended is None:
            ended = order[-1]
        s.run("scancel", ended)
        jid = wait_for(lambda e=ended: (
            lambda l: l[0] if len(l) == 1 and l[0] != e else None)(
            s.run("squeue", "-h", "-t", "R", "-o", "%i").stdout.split()),
            60, "the next job running")
        order.append(jid)
    check(order == [cc, b, a], "start order %r, want %r" % (order,
                                                          [cc, b, a]))
    s.run("scancel", a)
    # A user: a nice of 0 or more on their own job, nothing more.
    p = s.run("sbatch", "--parsable", "-H", "--wrap", "true", env=bob)
    u = p.stdout.strip()
    for args, rc, err in (
            (["Nice=10"], 0, ""),
            (["Nice=0"], 0, ""),
            (["Nice=-1"], 1, "Access/permission denied for job %s\n" % u),
            (["Priority=5"], 1, "Access/permission denied for job %s\n" % u),
            (["Priority=abc"], 1,
             "scontrol: error: Invalid Priority value: abc\n"),
            (["Priority=4294967294"], 1,
             "scontrol: error: Invalid Priority value: 4294967294\n"),
            (["Nice=3000000000"], 1, "scontrol: error: Nice value out of "
             "range (+/- 2147483645). Value ignored\n")):
        p = s.run("scontrol", "update", "JobId=" + u, *args, env=bob)
        check((p.returncode, p.stderr) == (rc, err),
              "user %s: %d %r" % (args, p.returncode, p.stderr))
    # An admin's negative nice; Priority=0 holds a pending job; a held
    # job takes no priority until released.
    s.run("scontrol", "release", u)
    w = s.sbatch("-d", "afterok:%s" % s.sbatch("-H", "--wrap", "true"),
                 "--wrap", "true")
    for args, rc, err in (
            (["Nice=-5"], 0, ""),
            (["Priority=0"], 0, ""),
            (["Priority=7"], 1, "Job is in held state, pending scheduler "
             "release for job %s\n" % w)):
        p = s.run("scontrol", "update", "JobId=" + w, *args)
        check((p.returncode, p.stderr) == (rc, err),
              "admin %s: %d %r" % (args, p.returncode, p.stderr))
    p = s.run("squeue", "-h", "-j", w, "-o", "%T %Q %y")
    check(p.stdout == "PENDING 0 -5\n", "after Priority=0: %r" % p.stdout)
    # Kept across a restart of the controller.
    s.run("scontrol", "release", w)
    s.run("scontrol", "update", "JobId=" + w, "Priority=42")
    c.kill_server()
    c.start_server()
    wait_for(lambda: s.run("squeue", "-h").returncode == 0, 30,
             "the server back")
    p = s.run("squeue", "-h", "-j", w, "-o", "%Q %y")
    check(p.stdout == "42 0\n", "after a restart: %r" % p.stdout)


def scenario_num_nodes(c):
    """scontrol update JobId=N NumNodes=K: a waiting job's tasks become
    K (one per node), shown by squeue %D and scontrol show job, and run;
    0, more nodes than the cluster has, a malformed count, a running
    job's other count are refused in Slurm's words."""
    s = Slurm(c)
    h = s.sbatch("-H", "--gres=gpu:1", "--wrap",
                 "touch task-$SLURM_JOB_ID-$SLURM_PROCID")
    for args, rc, err, nodes in (
            (["NumNodes=2"], 0, "", "2 2"),
            (["NumNodes=0"], 1, "Node count specification invalid for job "
             "%s\n" % h, "2 2"),
            (["NumNodes=3"], 1, "Requested node configuration is not "
             "available for job %s\n" % h, "2 2"),
            (["NumNodes=abc"], 1, "scontrol: error: Invalid numeric value "
             "\"abc\" for requested node count.\n", "2 2"),
            (["NumNodes=1-2"], 0, "", "1 1"),
            (["numnodes=2"], 0, "", "2 2")):
        p = s.run("scontrol", "update", "JobId=" + h, *args)
        q = s.run("squeue", "-h", "-j", h, "-o", "%D %C")
        got = (p.returncode, p.stderr, " ".join(q.stdout.split()))
        check(got == (rc, err, nodes), "%s: %r" % (args, got))
    p = s.run("scontrol", "show", "job", h)
    check(" NumNodes=2 " in p.stdout and " NumTasks=2 " in p.stdout,
          "show job: %r" % p.stdout)
    s.run("scontrol", "release", h)
    check(s.final(h)[1] == "COMPLETED", "the job of 2 tasks ran")
    for t in (0, 1):
        wait_for(lambda: os.path.exists(os.path.join(
            s.cwd, "task-%s-%d" % (h, t))), 30, "task %d's file" % t)
    # A running job keeps its count.
    r = s.sbatch("--wrap", "sleep 300")
    wait_for(lambda: s.run("squeue", "-h", "-j", r, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    p = s.run("scontrol", "update", "JobId=" + r, "NumNodes=1")
    check(p.returncode == 0, "the count it has: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=" + r, "NumNodes=2")
    check(p.returncode == 1 and p.stderr == "Requested operation not "
          "supported on this system for job %s\n" % r,
          "a running job's count: %r" % p.stderr)
    s.run("scancel", r)


JOB_TOKEN_PROBE = r"""
import os, urllib.error, urllib.request
base = os.environ["ALLOT_JOB_SERVER"].split(",")[0]
tok = os.environ["ALLOT_JOB_TOKEN"]
me, other = os.environ["SLURM_JOB_ID"], os.environ["OTHER"]
def call(method, path, body=None):
    r = urllib.request.Request(base + path, method=method, data=body,
                               headers={"Authorization": "Bearer " + tok,
                                        "Content-Type": "application/json"})
    try:
        return urllib.request.urlopen(r, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code
print("self", call("GET", "/v1/jobs/" + me))
print("other", call("GET", "/v1/jobs/" + other))
print("cancel_other", call("POST", "/v1/jobs/%s/cancel" % other, b"{}"))
print("cancel_self", call("POST", "/v1/jobs/%s/cancel" % me, b"{}"))
print("list", call("GET", "/v1/jobs"))
print("update_other", call("POST", "/v1/jobs/%s/update" % other,
                           b'{"name": "x"}'))
"""


def http_status(url, token):
    import urllib.error
    import urllib.request
    r = urllib.request.Request(url, headers={"Authorization": "Bearer " +
                                             token})
    try:
        return urllib.request.urlopen(r, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code


def scenario_job_token(c):
    """A job's own token: srun inside a batch script records its steps
    with no allot config of the user's (sacct shows ID.0, ID.1); the
    token reads its own job only, cancels nothing, is refused once the
    job ended, and shows in no job document and no log."""
    s = Slurm(c)
    check(not os.path.exists(os.path.join(c.root, ".config", "allot")),
          "the user has no config")
    other = s.sbatch("-H", "--wrap", "true")
    s.write("tok.sh",
            "#!/bin/bash\n#SBATCH -o tok-%j.out\n"
            "srun hostname\nsrun true\n"
            "printf '%s' \"$ALLOT_JOB_TOKEN\" > token-$SLURM_JOB_ID\n"
            "python3 - <<'EOF'\n" + JOB_TOKEN_PROBE + "EOF\n")
    p = s.run("sbatch", "--parsable", "tok.sh", env={"OTHER": other})
    jid = p.stdout.strip()
    check(p.returncode == 0, "sbatch: %r" % p.stderr)
    check(s.final(jid)[1] == "COMPLETED", "tok.sh did not complete")
    out = s.read("tok-%s.out" % jid)
    got = dict(line.split() for line in out.splitlines()
               if len(line.split()) == 2)
    want = {"self": "200", "other": "403", "cancel_other": "403",
            "cancel_self": "403", "list": "403", "update_other": "403"}
    check(all(got.get(k) == v for k, v in want.items()),
          "what the token may do: %r" % out)
    rows = sacct_rows(s, jid)
    for row in (["%s.0" % jid, "hostname", "COMPLETED", "0:0"],
                ["%s.1" % jid, "true", "COMPLETED", "0:0"]):
        check(row in rows, "%r not in sacct: %r" % (row, rows))
    check(s.run("squeue", "-h", "-j", other, "-o", "%T").stdout ==
          "PENDING\n", "the other job untouched")
    token = open(os.path.join(s.cwd, "token-" + jid)).read()
    check(token.startswith("alj_%s_" % jid), "the token: %r" % token[:8])
    check(http_status(c.url + "/v1/jobs/" + jid, token) == 401,
          "the token of an ended job")
    st, doc = c.api("GET", "/v1/jobs/" + jid)
    import json
    check(st == 200 and token not in json.dumps(doc) and
          token[20:] not in json.dumps(doc), "the token in the job's document")
    p = s.run("scontrol", "show", "job", jid)
    check(token[20:] not in p.stdout, "the token in scontrol show job")
    for d, _, files in os.walk(c.root):
        for f in files:
            path = os.path.join(d, f)
            if path.startswith(s.cwd):
                continue  # the job's own files
            try:
                data = open(path, "rb").read()
            except OSError:
                continue
            check(token[20:].encode() not in data,
                  "the token's secret in %s" % path)
    s.run("scancel", other)


def scenario_list_nospec(c):
    """GET /v1/jobs?spec=0 (what squeue asks for): the rows without what
    each job runs (its exported environment), the rest as without it;
    squeue shows the same."""
    s = Slurm(c)
    jid = s.sbatch("-H", "-J", "listed", "--wrap", "true")
    for q, has in (("", True), ("&spec=0", False), ("&spec=1", True)):
        st, out = c.api("GET", "/v1/jobs?state=active&expand=1" + q)
        row = [j for j in out["jobs"] if str(j["id"]) == jid]
        check(st == 200 and len(row) == 1, "the job in %r: %r" % (q, out))
        for k in ("command", "cwd", "env", "script"):
            check((k in row[0]) == has, "%s in the row of %r: %r" % (
                k, q, sorted(row[0])))
        check(row[0]["name"] == "listed" and row[0]["state"] == "held",
              "the rest of the row of %r: %r" % (q, row[0]))
    p = s.run("squeue", "-h", "-j", jid, "-o", "%i %j %T %r")
    check(p.stdout == "%s listed PENDING JobHeldUser\n" % jid,
          "squeue: %r" % p.stdout)
    s.run("scancel", jid)


def scenario_requeue_ended(c):
    """scontrol requeue of an ended batch job (completed, failed,
    cancelled) puts it back pending; it runs again with its restart count
    one higher; srun's jobs are refused as Slurm refuses them."""
    s = Slurm(c)
    jid = s.sbatch("-o", "re-%j.out", "--wrap",
                   "echo run $SLURM_RESTART_COUNT; "
                   "[ $SLURM_RESTART_COUNT -gt 0 ]")
    check(s.final(jid)[1:] == ["FAILED", "1:0"], "first run fails")
    p = s.run("scontrol", "requeue", jid)
    check(p.returncode == 0, "requeue of a failed job: %r" % p.stderr)
    f = s.final(jid)
    check(f[1:] == ["COMPLETED", "0:0"], "the second run: %r" % f)
    check(s.read("re-%s.out" % jid) == "run 0\nrun 1\n",
          "its output: %r" % s.read("re-%s.out" % jid))
    p = s.run("scontrol", "show", "job", jid)
    check("Restarts=1" in p.stdout and "JobState=COMPLETED" in p.stdout,
          "show job: %r" % p.stdout)
    # Completed: again (restart 2), held with requeuehold.
    p = s.run("scontrol", "requeuehold", jid)
    check(p.returncode == 0, "requeuehold of a completed job: %r" % p.stderr)
    p = s.run("squeue", "-h", "-j", jid, "-o", "%T %r")
    check(p.stdout == "PENDING JobHeldUser\n", "held: %r" % p.stdout)
    s.run("scontrol", "release", jid)
    check(s.final(jid)[1] == "COMPLETED", "third run")
    p = s.run("scontrol", "show", "job", jid)
    check("Restarts=2" in p.stdout, "Restarts=2: %r" % p.stdout)
    # Cancelled while pending.
    k = s.sbatch("-H", "--wrap", "echo again")
    s.run("scancel", k)
    check(s.final(k)[1].startswith("CANCELLED"), "cancelled")
    p = s.run("scontrol", "requeue", k)
    check(p.returncode == 0, "requeue of a cancelled job: %r" % p.stderr)
    check(s.final(k)[1] == "COMPLETED", "the cancelled job runs")
    # --no-requeue: it stays ended.
    n = s.sbatch("--no-requeue", "--wrap", "true")
    check(s.final(n)[1] == "COMPLETED", "the --no-requeue job")
    p = s.run("scontrol", "requeue", n)
    check(p.returncode == 1 and "Requested operation is presently disabled"
          in p.stderr, "requeue of a --no-requeue job: %r" % p.stderr)
    # An ended element of an array: its array has counted it.
    a = s.sbatch("--array=0-1", "--wrap", "true")
    wait_for(lambda: "%s_0|COMPLETED" % a in s.run(
        "sacct", "-P", "-n", "-X", "-j", a, "-o",
        "JobID,State").stdout.splitlines(), 60, "the array's element")
    p = s.run("scontrol", "requeue", a + "_0")
    check(p.returncode == 1 and "Requested operation is presently disabled"
          in p.stderr, "requeue of an ended element: %r" % p.stderr)
    # srun's job is no batch job.
    p = s.run("srun", "-J", "interactive1", "true")
    p = s.run("sacct", "-X", "-P", "-n", "--name", "interactive1", "-o",
              "JobIDRaw")
    sid = p.stdout.split()[0]
    p = s.run("scontrol", "requeue", sid)
    check(p.returncode == 1 and "Only batch jobs are accepted or processed"
          in p.stderr, "requeue of srun's job: %r" % p.stderr)


def scenario_update_forms(c):
    """scontrol update as Slurm 22.05 takes it: TimeLimit=+T and -T (the
    job's limit raised or lowered), UNLIMITED and INFINITE in any case, a
    list of jobs (JobId=A,B: each updated, an unknown one said), a running
    job renamed by its user, and refusals said "... for job ID"."""
    s = Slurm(c)
    a = s.sbatch("-H", "-t", "30", "--wrap", "true")
    b = s.sbatch("-H", "-t", "unlimited", "--wrap", "true")

    def limit(j):
        return s.run("squeue", "-h", "-j", j, "-o", "%l").stdout.strip()

    check(limit(b) == "UNLIMITED", "sbatch -t unlimited: %r" % limit(b))
    for v, want in (("+5", "35:00"), ("-10", "25:00"), ("-1", "24:00"),
                    ("+1:00:00", "1:24:00"), ("unlimited", "UNLIMITED"),
                    ("Infinite", "UNLIMITED"), ("30", "30:00")):
        p = s.run("scontrol", "update", "JobId=" + a, "TimeLimit=" + v)
        check(p.returncode == 0 and limit(a) == want,
              "TimeLimit=%s: %d %r %r" % (v, p.returncode, p.stderr,
                                         limit(a)))
    for v, text in (("-100", "scontrol: error: TimeLimit decrement larger "
                     "than current time limit (100 > 30)\n"),
                    ("+abc", "scontrol: error: Invalid TimeLimit value\n"),
                    ("+", "scontrol: error: Invalid TimeLimit value\n")):
        p = s.run("scontrol", "update", "JobId=" + a, "TimeLimit=" + v)
        check(p.returncode == 1 and p.stderr == text and limit(a) == "30:00",
              "TimeLimit=%s: %d %r" % (v, p.returncode, p.stderr))
    p = s.run("scontrol", "update", "JobId=" + b, "TimeLimit=+5")
    check(p.returncode == 1 and limit(b) == "UNLIMITED",
          "+5 of an unlimited job: %d %r" % (p.returncode, p.stderr))
    # A list of jobs: each one; an unknown one said, the others done.
    p = s.run("scontrol", "update", "JobId=%s,%s" % (a, b), "TimeLimit=20")
    check(p.returncode == 0 and limit(a) == limit(b) == "20:00",
          "JobId=A,B: %r %s %s" % (p.stderr, limit(a), limit(b)))
    p = s.run("scontrol", "update", "JobId=%s,999999,%s" % (a, b),
              "TimeLimit=15")
    check(p.returncode == 1 and
          p.stderr == "Invalid job id specified for job 999999\n" and
          limit(a) == limit(b) == "15:00",
          "JobId=A,unknown,B: %r %s %s" % (p.stderr, limit(a), limit(b)))
    # A relative limit takes one job, as Slurm's scontrol reads its limit.
    p = s.run("scontrol", "update", "JobId=%s,%s" % (a, b), "TimeLimit=-5")
    check(p.returncode == 1 and p.stderr == "scontrol: error: Invalid job "
          "ID %s,%s\n" % (a, b) and limit(a) == limit(b) == "15:00",
          "JobId=A,B TimeLimit=-5: %r" % p.stderr)
    # Dependency=: shown by scontrol show job; one on the job itself or
    # one that closes a cycle is refused, as Slurm refuses them.
    p = s.run("scontrol", "update", "JobId=" + a, "Dependency=afterok:" + b)
    check(p.returncode == 0, "Dependency=afterok:B: %r" % p.stderr)
    p = s.run("scontrol", "show", "job", a)
    check("Dependency=afterok:%s\n" % b in p.stdout,
          "show job's Dependency: %r" % p.stdout)
    for dep in ("afterany:" + a, "afterok:%s,afternotok:%s" % (b, a)):
        p = s.run("scontrol", "update", "JobId=" + a, "Dependency=" + dep)
        check(p.returncode == 1 and
              p.stderr == "Job dependency problem for job %s\n" % a,
              "Dependency=%s: %d %r" % (dep, p.returncode, p.stderr))
    p = s.run("scontrol", "update", "JobId=" + b, "Dependency=afterany:" + a)
    check(p.returncode == 1 and
          p.stderr == "Circular job dependency for job %s\n" % b,
          "a cycle: %d %r" % (p.returncode, p.stderr))
    p = s.run("scontrol", "show", "job", b)
    check("Dependency=(null)\n" in p.stdout, "B unchanged: %r" % p.stdout)
    d = s.sbatch("-H", "-d", "afterok:%s:%s,afterany:%s" % (a, b, a),
                 "--wrap", "true")
    p = s.run("scontrol", "show", "job", d)
    check("Dependency=afterok:%s:%s,afterany:%s\n" % (a, b, a) in p.stdout,
          "sbatch -d's in show job: %r" % p.stdout)
    s.run("scancel", d)
    for j in (a, b):
        s.run("scancel", j)
    # A job array: every element, those to come too; a user may not raise
    # an element's own limit through its array's.
    arr = s.sbatch("-H", "-t", "30", "--array=0-2", "--wrap", "true")
    p = s.run("scontrol", "update", "JobId=%s_1" % arr, "TimeLimit=10")
    check(p.returncode == 0, "an element's limit: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=" + arr, "TimeLimit=20",
              "JobName=arr")
    check(p.returncode == 0, "update of an array: %r" % p.stderr)
    p = s.run("squeue", "-h", "-r", "-j", arr, "-o", "%i %j %l")
    check(sorted(p.stdout.splitlines()) == ["%s_%d arr 20:00" % (arr, i)
                                            for i in range(3)],
          "the array's elements: %r" % p.stdout)
    s.run("scancel", arr)
    st, tok = c.api("POST", "/v1/tokens", {"user": "bob", "role": "user"})
    bob = dict(ALLOT_TOKEN=tok["token"])
    p = s.run("sbatch", "--parsable", "-H", "-t", "30", "--array=0-1",
              "--wrap", "true", env=bob)
    arr = p.stdout.strip()
    p = s.run("scontrol", "update", "JobId=%s_1" % arr, "TimeLimit=10",
              env=bob)
    check(p.returncode == 0, "bob lowers an element: %r" % p.stderr)
    p = s.run("scontrol", "update", "JobId=" + arr, "TimeLimit=30", env=bob)
    check(p.returncode == 1 and
          p.stderr == "Access/permission denied for job %s\n" % arr,
          "bob raising an element through its array: %r" % p.stderr)
    s.run("scancel", arr)
    # A running job: its user renames it and lowers its limit by -T.
    p = s.run("sbatch", "--parsable", "-t", "10", "--wrap", "sleep 120",
              env=bob)
    r = p.stdout.strip()
    wait_for(lambda: s.run("squeue", "-h", "-j", r, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    p = s.run("scontrol", "update", "JobId=" + r, "JobName=renamed",
              "TimeLimit=-2", env=bob)
    check(p.returncode == 0, "rename of a running job: %r" % p.stderr)
    p = s.run("squeue", "-h", "-j", r, "-o", "%j %l")
    check(p.stdout == "renamed 8:00\n", "renamed: %r" % p.stdout)
    p = s.run("scontrol", "update", "JobId=" + r, "TimeLimit=+1", env=bob)
    check(p.returncode == 1 and
          p.stderr == "Access/permission denied for job %s\n" % r,
          "a user's +1: %r" % p.stderr)
    s.run("scancel", r)


def scenario_requeue_refused(c):
    """scontrol requeue refuses, as Slurm does whatever the job's state, a
    job submitted with --no-requeue (running or pending) and a job that is
    no batch job (a running srun): they go on untouched."""
    s = Slurm(c)
    r = s.sbatch("--no-requeue", "-o", "nr.out", "--wrap",
                 "echo run $SLURM_RESTART_COUNT; sleep 120")
    wait_for(lambda: s.run("squeue", "-h", "-j", r, "-o",
                           "%t").stdout.strip() == "R", 30, "running")
    p = s.run("scontrol", "requeue", r)
    check(p.returncode == 1 and p.stderr == "Requested operation is "
          "presently disabled for job %s\n" % r,
          "requeue of a running --no-requeue job: %d %r" % (p.returncode,
                                                           p.stderr))
    time.sleep(1)
    p = s.run("scontrol", "show", "job", r)
    check("Restarts=0" in p.stdout and "JobState=RUNNING" in p.stdout,
          "the --no-requeue job goes on: %r" % p.stdout)
    h = s.sbatch("--no-requeue", "-H", "--wrap", "true")
    p = s.run("scontrol", "requeue", h)
    check(p.returncode == 1 and p.stderr == "Requested operation is "
          "presently disabled for job %s\n" % h,
          "requeue of a pending --no-requeue job: %r" % p.stderr)
    # srun's job, running.
    out = open(os.path.join(s.cwd, "srun.out"), "w")
    srun = subprocess.Popen(["srun", "-J", "int1", "sh", "-c",
                             "sleep 6; echo done"], stdout=out,
                            stderr=subprocess.STDOUT, env=s.env, cwd=s.cwd)
    try:
        sid = wait_for(lambda: s.run("squeue", "-h", "-n", "int1", "-t", "R",
                                     "-o", "%i").stdout.strip(), 30,
                       "srun's job running")
        p = s.run("scontrol", "requeue", sid)
        check(p.returncode == 1 and p.stderr == "Only batch jobs are "
              "accepted or processed for job %s\n" % sid,
              "requeue of a running srun job: %d %r" % (p.returncode,
                                                       p.stderr))
        check(srun.wait(timeout=60) == 0, "srun goes on and ends well")
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()
        out.close()
    check(s.read("srun.out") == "done\n", "srun's output: %r" %
          s.read("srun.out"))
    for j in (r, h):
        s.run("scancel", j)


def scenario_steps_select(c):
    """sacct -j ID.STEP (ID.batch, ID.0) gives that step's line alone, as
    Slurm's; Elapsed is End minus Start on every line; --json names each
    step; srun's job is one step ID.0 and salloc's has no batch step; a
    step that runs across a restart of the controller ends as it
    should."""
    s = Slurm(c)
    user_config(s)
    jid = s.sbatch("-o", "sel.out", "--wrap",
                   "srun sh -c 'exit 3'; srun sleep 1.5; srun true")
    check(s.final(jid)[1] == "COMPLETED", "the job completes")
    for sel, want in ((jid + ".1", [[jid + ".1", "sleep", "COMPLETED"]]),
                      (jid + ".batch", [[jid + ".batch", "batch",
                                         "COMPLETED"]]),
                      ("%s.0,%s.2" % (jid, jid), [[jid + ".0", "sh",
                                                   "FAILED"],
                                                  [jid + ".2", "true",
                                                   "COMPLETED"]]),
                      (jid + ".7", [])):
        p = s.run("sacct", "-P", "-n", "-j", sel, "-o",
                  "JobID,JobName,State")
        rows = [line.split("|") for line in p.stdout.splitlines()]
        check(p.returncode == 0 and rows == want,
              "sacct -j %s: %d %r %r" % (sel, p.returncode, rows, p.stderr))
    p = s.run("sacct", "-P", "-n", "-j", jid + ".x")
    check(p.returncode == 1 and "Invalid job id" in p.stderr,
          "sacct -j ID.x: %d %r" % (p.returncode, p.stderr))
    import calendar
    for r in sacct_rows(s, jid, "JobID,Start,End,ElapsedRaw"):
        t = [calendar.timegm(time.strptime(x, "%Y-%m-%dT%H:%M:%S"))
             for x in r[1:3]]
        check(int(r[3]) == t[1] - t[0], "Elapsed is End minus Start: %r" % r)
    import json
    p = s.run("sacct", "--json", "-j", jid)
    ids = [x["step"]["id"] for x in json.loads(p.stdout)["jobs"][0]["steps"]]
    check(ids == [jid + ".batch", jid + ".0", jid + ".1", jid + ".2"],
          "sacct --json step ids: %r" % ids)
    # An srun in a session of its own (setsid) counts in its task's steps.
    k = s.sbatch("-o", "ss.out", "--wrap", "srun true; setsid srun sh -c "
                 "'exit 2'; srun true")
    s.final(k)
    rows = sacct_rows(s, k)
    check(rows[2:] == [[k + ".0", "true", "COMPLETED", "0:0"],
                       [k + ".1", "sh", "FAILED", "2:0"],
                       [k + ".2", "true", "COMPLETED", "0:0"]],
          "a step under setsid: %r" % rows)
    # srun's job (no batch script) is one step, ID.0, named as the job;
    # salloc's has no batch step, only its sruns' steps: as Slurm's.
    p = s.run("srun", "-J", "alone", "sh", "-c", "exit 5")
    p = s.run("sacct", "-X", "-P", "-n", "--name", "alone", "-o", "JobIDRaw")
    sj = p.stdout.split()[0]
    rows = sacct_rows(s, sj)
    check(rows == [[sj, "alone", "FAILED", "5:0"],
                   [sj + ".0", "alone", "FAILED", "5:0"]],
          "sacct of srun's job: %r" % rows)
    p = s.run("sacct", "--json", "-j", sj)
    ids = [x["step"]["id"] for x in json.loads(p.stdout)["jobs"][0]["steps"]]
    check(ids == [sj + ".0"], "--json of srun's job: %r" % ids)
    p = s.run("salloc", "-n", "1", "sh", "-c", "srun true; echo $SLURM_JOB_ID",
              timeout=120)
    aid = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "?"
    rows = sacct_rows(s, aid)
    check([r[0] for r in rows] == [aid, aid + ".0"],
          "sacct of salloc's job: %r (%r)" % (rows, p.stderr))
    # A step running while the controller restarts.
    k = s.sbatch("-o", "k.out", "--wrap", "srun sleep 4")
    wait_for(lambda: [k + ".0", "sleep", "RUNNING", "0:0"] in
             sacct_rows(s, k), 60, "the step running")
    c.kill_server()
    c.start_server()
    check(s.final(k)[1] == "COMPLETED", "the job across the restart")
    rows = wait_for(lambda: (lambda r: r if r[-1][2] != "RUNNING" else None)(
        sacct_rows(s, k)), 30, "the step's end")
    check(rows[2:] == [[k + ".0", "sleep", "COMPLETED", "0:0"]],
          "a step across a restart: %r" % rows)


SCENARIOS = {
    "srun": scenario_srun,
    "srun_batch": scenario_srun_batch,
    "salloc": scenario_salloc,
    "signal": scenario_signal,
    "scripts": scenario_scripts,
    "partitions": scenario_partitions,
    "requeue": scenario_requeue,
    "steps": scenario_steps,
    "update": scenario_update,
    "requeue_ended": scenario_requeue_ended,
    "priority": scenario_priority,
    "num_nodes": scenario_num_nodes,
    "job_token": scenario_job_token,
    "list_nospec": scenario_list_nospec,
    "update_forms": scenario_update_forms,
    "requeue_refused": scenario_requeue_refused,
    "steps_select": scenario_steps_select,
}

if __name__ == "__main__":
    e2e.SCENARIOS.clear()
    e2e.SCENARIOS.update(SCENARIOS)
    sys.exit(e2e.main())
