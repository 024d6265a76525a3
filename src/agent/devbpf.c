/*
 * devbpf.c -- the device rule of a task's cgroup on the cgroup v2 tree: a
 * BPF_PROG_TYPE_CGROUP_DEVICE program, assembled here instruction by
 * instruction (no compiler, no libbpf), loaded and attached with bpf(2).
 *
 * cgroup v2 has no devices controller; the kernel instead runs the device
 * programs attached to a process's cgroup and its ancestors whenever the
 * process opens or mknods a device node, and refuses (EPERM) what any of
 * them returns 0 for.  The rule a task gets: every device as before, but
 * the GPUs' character majors (that of the nvidiaN nodes, 195, and that of
 * nvidia-uvm) are open only at the task's own nvidiaN minors and the
 * control devices' (nvidiactl, nvidia-modeset, nvidia-uvm,
 * nvidia-uvm-tools).  A GPU of the node that is not the task's, or one the
 * agent does not manage, is refused.
 *
 * The program is attached to the task's own cgroup with BPF_F_ALLOW_MULTI
 * (so the programs of the cgroups above it, a service manager's, still
 * run as well: all must allow) and its descriptors closed at once: the
 * cgroup holds the program, and removing the cgroup frees it.  Nothing of
 * it stays in the agent.
 *
 * Linux only; elsewhere every call says AL_ENOTSUP.
 *
 * May call: src/common (files, allocation).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_int.h"
#include "core/error.h"
#include "xmalloc.h"

#ifdef __linux__
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

/* Where the task's rule may find its GPUs' control devices. */
static const char *const control_nodes[] = { "nvidiactl", "nvidia-modeset" };
static const char *const uvm_nodes[] = { "nvidia-uvm", "nvidia-uvm-tools" };

/* NVIDIA's fixed numbers: nvidiaN is 195:N, nvidiactl 195:255,
 * nvidia-modeset 195:254.  Allowed even when the directory lacks the
 * control nodes (emulated GPUs' nodes, a container's /dev). */
#define NV_MAJOR 195
#define NV_CTL_MINOR 255
#define NV_MODESET_MINOR 254

/* The gate of major in r, added when missing; NULL when r is full. */
static struct al__devgate *
gate(al__devrule_t *r, uint32_t major, bool add)
{
    for (int i = 0; i < r->ngates; i++)
        if (r->gates[i].major == major)
            return &r->gates[i];
    if (!add || r->ngates == AL__DEVRULE_MAJORS)
        return NULL;
    struct al__devgate *g = &r->gates[r->ngates++];
    memset(g, 0, sizeof *g);
    g->major = major;
    return g;
}

/* Lets minor through g (once). */
static void
allow(struct al__devgate *g, uint32_t minor)
{
    if (g == NULL)
        return;
    for (int i = 0; i < g->nminors; i++)
        if (g->minors[i] == minor)
            return;
    if (g->nminors < AL__DEVRULE_MINORS)
        g->minors[g->nminors++] = minor;
}

/* The character device dir/name: true with its number in *rdev. */
static bool
char_node(const char *dir, const char *name, dev_t *rdev)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode))
        return false;
    *rdev = st.st_rdev;
    return true;
}

int
al__devrule_read(al__devrule_t *r, const char *dev_dir, int ngpus,
                 uint64_t mine)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < ngpus; i++) {
        char name[32];
        dev_t d;
        snprintf(name, sizeof name, "nvidia%d", i);
        if (!char_node(dev_dir, name, &d))
            continue;
        struct al__devgate *g = gate(r, major(d), true);
        if (i < 64 && (mine & ((uint64_t)1 << i)))
            allow(g, minor(d));
    }
    if (r->ngates == 0)
        return 0; /* no GPU node to keep anyone from */
    for (size_t k = 0; k < sizeof control_nodes / sizeof *control_nodes; k++) {
        dev_t d;
        if (char_node(dev_dir, control_nodes[k], &d))
            allow(gate(r, major(d), false), minor(d));
    }
    for (size_t k = 0; k < sizeof uvm_nodes / sizeof *uvm_nodes; k++) {
        dev_t d;
        if (char_node(dev_dir, uvm_nodes[k], &d))
            allow(gate(r, major(d), true), minor(d));
    }
    struct al__devgate *nv = gate(r, NV_MAJOR, false);
    allow(nv, NV_CTL_MINOR);
    allow(nv, NV_MODESET_MINOR);
    return r->ngates;
}

/* The instructions, as the kernel's uapi encodes them. */
static struct bpf_insn
insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i;
    memset(&i, 0, sizeof i);
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

/* dst = *(u32 *)(src + off) */
#define LDX_W(dst, src, off) insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0)
/* dst &= imm, 32 bits (the upper half cleared) */
#define AND32(dst, imm) insn(BPF_ALU | BPF_AND | BPF_K, dst, 0, 0, imm)
/* if dst OP imm: pc += off */
#define JMP(op, dst, imm, off) insn(BPF_JMP | (op) | BPF_K, dst, 0, off, imm)
#define JA(off) insn(BPF_JMP | BPF_JA, 0, 0, off, 0)
#define MOV(dst, imm) insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define EXIT() insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The context's fields (struct bpf_cgroup_dev_ctx). */
#define CTX_TYPE 0  /* access << 16 | type */
#define CTX_MAJOR 4 /* major */
#define CTX_MINOR 8 /* minor */

/*
 * The program, with r1 the context:
 *
 *       r2 = access_type & 0xffff          the device's type
 *       if r2 != CHAR goto allow
 *       r3 = major; r4 = minor
 *     for each gated major M, with its minors m1..mk:
 *       if r3 != M goto next               (k + 1 on)
 *       if r4 == m1 goto allow
 *       ...
 *       goto deny
 *     next:
 *     allow: r0 = 1; exit
 *     deny:  r0 = 0; exit             (only when something is gated)
 *
 * Forward jumps only (the verifier wants no loops), their offsets counted
 * from the instruction after the jump.
 */
struct bpf_insn *
al__devbpf_build(const al__devrule_t *r, size_t *n)
{
    /* Without a gate there is nothing to deny, and the verifier refuses
     * instructions no path reaches: no deny block then. */
    size_t len = 5 + 2 + (r->ngates > 0 ? 2 : 0);
    for (int i = 0; i < r->ngates; i++)
        len += 2 + (size_t)r->gates[i].nminors;
    struct bpf_insn *p = al_xcalloc(len, sizeof *p);
    long pc = 0;
    const long deny_pc = (long)len - 2,
               allow_pc = r->ngates > 0 ? deny_pc - 2 : deny_pc;
    /* The offset of a jump at pc to target. */
#define TO(target) ((int16_t)((target)-pc - 1))
    p[pc++] = LDX_W(BPF_REG_2, BPF_REG_1, CTX_TYPE);
    p[pc++] = AND32(BPF_REG_2, 0xffff);
    p[pc] = JMP(BPF_JNE, BPF_REG_2, BPF_DEVCG_DEV_CHAR, TO(allow_pc));
    pc++;
    p[pc++] = LDX_W(BPF_REG_3, BPF_REG_1, CTX_MAJOR);
    p[pc++] = LDX_W(BPF_REG_4, BPF_REG_1, CTX_MINOR);
    for (int i = 0; i < r->ngates; i++) {
        const struct al__devgate *g = &r->gates[i];
        p[pc++] = JMP(BPF_JNE, BPF_REG_3, (int32_t)g->major,
                      (int16_t)(g->nminors + 1));
        for (int k = 0; k < g->nminors; k++) {
            p[pc] =
                JMP(BPF_JEQ, BPF_REG_4, (int32_t)g->minors[k], TO(allow_pc));
            pc++;
        }
        p[pc] = JA(TO(deny_pc));
        pc++;
    }
#undef TO
    p[pc++] = MOV(BPF_REG_0, 1);
    p[pc++] = EXIT();
    if (r->ngates > 0) {
        p[pc++] = MOV(BPF_REG_0, 0);
        p[pc++] = EXIT();
    }
    *n = (size_t)pc;
    return p;
}

static long
sys_bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

/* Why the kernel refused: errno, and what an agent can do about it. */
static const char *
hint(int err)
{
    switch (err) {
    case EPERM:
        return " (loading it needs CAP_BPF and CAP_SYS_ADMIN: run the agent "
               "as root)";
    case ENOSYS:
        return " (a kernel without CONFIG_BPF_SYSCALL)";
    case EINVAL:
        return " (a kernel without CONFIG_CGROUP_BPF, or older than 4.15)";
    default:
        return "";
    }
}

int
al__devbpf_load(const struct bpf_insn *p, size_t n, int *fd, char **cause)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    a.insns = (uint64_t)(uintptr_t)p;
    a.insn_cnt = (uint32_t)n;
    /* No helper is called: the license only names the project's. */
    a.license = (uint64_t)(uintptr_t) "Apache-2.0";
    snprintf(a.prog_name, sizeof a.prog_name, "allot_devices");
    long r = sys_bpf(BPF_PROG_LOAD, &a);
    if (r >= 0) {
        *fd = (int)r;
        return 0;
    }
    int err = errno;
    char *log = NULL;
    if (err == EACCES || err == EINVAL) {
        /* Again, with the verifier's log for the cause. */
        size_t cap = 1 << 16;
        log = al_xcalloc(cap, 1);
        a.log_buf = (uint64_t)(uintptr_t)log;
        a.log_size = (uint32_t)cap;
        a.log_level = 1;
        r = sys_bpf(BPF_PROG_LOAD, &a);
        if (r >= 0) /* not refused this time: take it */
            close((int)r);
        /* Its findings, without the statistics line at the end. */
        char *stats = strstr(log, "\nprocessed ");
        if (stats != NULL)
            *stats = '\0';
        size_t k = strlen(log);
        while (k > 0 && log[k - 1] == '\n')
            log[--k] = '\0';
    }
    bool said = log != NULL && *log != '\0';
    *cause = al_xasprintf("cannot load the device program: %s%s%s%s",
                          strerror(err), said ? "" : hint(err),
                          said ? "; the verifier said: " : "", said ? log : "");
    free(log);
    return err == EPERM ? AL_EPERM : AL_ENOTSUP;
}

/* Attaches (or, detach true, detaches) the program fd to the cgroup
 * directory dir; 0 or -1 with errno. */
static int
attach(const char *dir, int prog, bool detach)
{
    int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0)
        return -1;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.target_fd = (uint32_t)cg;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = BPF_CGROUP_DEVICE;
    a.attach_flags = detach ? 0 : BPF_F_ALLOW_MULTI;
    long r = sys_bpf(detach ? BPF_PROG_DETACH : BPF_PROG_ATTACH, &a);
    int err = errno;
    close(cg);
    errno = err;
    return r == 0 ? 0 : -1;
}

int
al__devbpf_attach(const char *dir, const al__devrule_t *r, char **cause)
{
    size_t n;
    struct bpf_insn *p = al__devbpf_build(r, &n);
    int fd = -1, rc = al__devbpf_load(p, n, &fd, cause);
    free(p);
    if (rc != 0)
        return rc;
    if (attach(dir, fd, false) != 0) {
        int err = errno;
        *cause = al_xasprintf("cannot attach the device program to %s: %s%s",
                              dir, strerror(err),
                              err == EPERM ? " (a cgroup above it holds a "
                                             "device program that does not "
                                             "allow others)"
                                           : "");
        rc = AL_EIO;
    }
    /* The cgroup holds the program now; nothing of it stays here. */
    close(fd);
    return rc;
}

int
al__devbpf_check(const char *dir, char **cause)
{
    /* A rule that gates nothing: allows every device. */
    al__devrule_t none;
    memset(&none, 0, sizeof none);
    size_t n;
    struct bpf_insn *p = al__devbpf_build(&none, &n);
    int fd = -1, rc = al__devbpf_load(p, n, &fd, cause);
    free(p);
    if (rc != 0)
        return rc;
    if (attach(dir, fd, false) != 0) {
        *cause = al_xasprintf("cannot attach a device program to %s: %s", dir,
                              strerror(errno));
        rc = AL_ENOTSUP;
    } else if (attach(dir, fd, true) != 0) {
        *cause = al_xasprintf("cannot detach the device program from %s: %s",
                              dir, strerror(errno));
        rc = AL_EIO;
    }
    close(fd);
    return rc;
}

#else /* not Linux */

int
al__devrule_read(al__devrule_t *r, const char *dev_dir, int ngpus,
                 uint64_t mine)
{
    (void)dev_dir;
    (void)ngpus;
    (void)mine;
    memset(r, 0, sizeof *r);
    return 0;
}

struct bpf_insn *
al__devbpf_build(const al__devrule_t *r, size_t *n)
{
    (void)r;
    *n = 0;
    return NULL;
}

int
al__devbpf_load(const struct bpf_insn *p, size_t n, int *fd, char **cause)
{
    (void)p;
    (void)n;
    (void)fd;
    *cause = al_xasprintf("device programs are Linux's");
    return AL_ENOTSUP;
}

int
al__devbpf_attach(const char *dir, const al__devrule_t *r, char **cause)
{
    (void)dir;
    (void)r;
    *cause = al_xasprintf("device programs are Linux's");
    return AL_ENOTSUP;
}

int
al__devbpf_check(const char *dir, char **cause)
{
    (void)dir;
    *cause = al_xasprintf("device programs are Linux's");
    return AL_ENOTSUP;
}

#endif
