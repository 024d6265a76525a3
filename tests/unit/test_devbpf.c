/*
 * test_devbpf.c -- the cgroup v2 device rule (src/agent/devbpf.c): the
 * rule read from device nodes (made with mknod, as root), the program's
 * instructions for a given rule, and, as root on a kernel with BPF, that
 * the verifier accepts them.  Without root the parts that need it return
 * early (the e2e scenario node-cgroup_devices_bpf runs the program on real
 * processes).
 */
#ifdef __linux__
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent_int.h"
#include "core/error.h"
#include "test.h"

/* The instruction at p[i], field by field. */
#define ASSERT_INSN(p, i, code_, dst, src, off_, imm_)                         \
    do {                                                                       \
        ASSERT_EQ((p)[i].code, (code_));                                       \
        ASSERT_EQ((p)[i].dst_reg, (dst));                                      \
        ASSERT_EQ((p)[i].src_reg, (src));                                      \
        ASSERT_EQ((p)[i].off, (off_));                                         \
        ASSERT_EQ((p)[i].imm, (imm_));                                         \
    } while (0)

#define JNE (BPF_JMP | BPF_JNE | BPF_K)
#define JEQ (BPF_JMP | BPF_JEQ | BPF_K)
#define LDXW (BPF_LDX | BPF_MEM | BPF_W)
#define MOV (BPF_ALU64 | BPF_MOV | BPF_K)
#define EXIT (BPF_JMP | BPF_EXIT)

/* 195 open at minors 1, 255, 254; a second major 500 at 0. */
static al__devrule_t
two_gates(void)
{
    al__devrule_t r;
    memset(&r, 0, sizeof r);
    r.ngates = 2;
    r.gates[0].major = 195;
    r.gates[0].nminors = 3;
    r.gates[0].minors[0] = 1;
    r.gates[0].minors[1] = 255;
    r.gates[0].minors[2] = 254;
    r.gates[1].major = 500;
    r.gates[1].nminors = 1;
    r.gates[1].minors[0] = 0;
    return r;
}

static void
program_of_rule(void)
{
    al__devrule_t r = two_gates();
    size_t n;
    struct bpf_insn *p = al__devbpf_build(&r, &n);
    /* 5 to read the context, 2 + 3 and 2 + 1 for the gates, 4 to end. */
    ASSERT_EQ(n, 17);
    ASSERT_INSN(p, 0, LDXW, BPF_REG_2, BPF_REG_1, 0, 0);
    ASSERT_INSN(p, 1, BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    /* Not a character device: allowed (pc 13). */
    ASSERT_INSN(p, 2, JNE, BPF_REG_2, 0, 10, BPF_DEVCG_DEV_CHAR);
    ASSERT_INSN(p, 3, LDXW, BPF_REG_3, BPF_REG_1, 4, 0);
    ASSERT_INSN(p, 4, LDXW, BPF_REG_4, BPF_REG_1, 8, 0);
    /* Major 195: its three minors to allow, any other to deny. */
    ASSERT_INSN(p, 5, JNE, BPF_REG_3, 0, 4, 195);
    ASSERT_INSN(p, 6, JEQ, BPF_REG_4, 0, 6, 1);
    ASSERT_INSN(p, 7, JEQ, BPF_REG_4, 0, 5, 255);
    ASSERT_INSN(p, 8, JEQ, BPF_REG_4, 0, 4, 254);
    ASSERT_INSN(p, 9, BPF_JMP | BPF_JA, 0, 0, 5, 0);
    /* Major 500: minor 0. */
    ASSERT_INSN(p, 10, JNE, BPF_REG_3, 0, 2, 500);
    ASSERT_INSN(p, 11, JEQ, BPF_REG_4, 0, 1, 0);
    ASSERT_INSN(p, 12, BPF_JMP | BPF_JA, 0, 0, 2, 0);
    ASSERT_INSN(p, 13, MOV, BPF_REG_0, 0, 0, 1);
    ASSERT_INSN(p, 14, EXIT, 0, 0, 0, 0);
    ASSERT_INSN(p, 15, MOV, BPF_REG_0, 0, 0, 0);
    ASSERT_INSN(p, 16, EXIT, 0, 0, 0, 0);
    free(p);
}

static void
program_gates_nothing(void)
{
    /* No gate: every device allowed, and no deny block that no path
     * reaches (the verifier refuses those). */
    al__devrule_t r;
    memset(&r, 0, sizeof r);
    size_t n;
    struct bpf_insn *p = al__devbpf_build(&r, &n);
    ASSERT_EQ(n, 7);
    ASSERT_INSN(p, 2, JNE, BPF_REG_2, 0, 2, BPF_DEVCG_DEV_CHAR);
    ASSERT_INSN(p, 5, MOV, BPF_REG_0, 0, 0, 1);
    ASSERT_INSN(p, 6, EXIT, 0, 0, 0, 0);
    free(p);
}

/* Makes the character device dir/name, maj:min; false without the right
 * to (not root). */
static bool
node(const char *dir, const char *name, unsigned maj, unsigned min)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return mknod(path, S_IFCHR | 0600, makedev(maj, min)) == 0;
}

static void
rule_from_nodes(void)
{
    char dir[] = "/tmp/al-devbpf-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    al__devrule_t r;
    /* No GPU node: nothing to gate. */
    ASSERT_EQ(al__devrule_read(&r, dir, 2, 1), 0);
    if (!node(dir, "nvidia0", 195, 0)) {
        rmdir(dir);
        return; /* mknod needs root */
    }
    ASSERT(node(dir, "nvidia1", 195, 1));
    ASSERT(node(dir, "nvidia2", 195, 2));
    ASSERT(node(dir, "nvidiactl", 195, 255));
    ASSERT(node(dir, "nvidia-uvm", 507, 0));
    ASSERT(node(dir, "nvidia-uvm-tools", 507, 1));
    /* GPUs 0 and 2 of 3 are the task's. */
    ASSERT_EQ(al__devrule_read(&r, dir, 3, 5), 2);
    ASSERT_EQ(r.gates[0].major, 195);
    ASSERT_EQ(r.gates[0].nminors, 4);
    ASSERT_EQ(r.gates[0].minors[0], 0);
    ASSERT_EQ(r.gates[0].minors[1], 2);
    ASSERT_EQ(r.gates[0].minors[2], 255);
    ASSERT_EQ(r.gates[0].minors[3], 254); /* nvidia-modeset's, by number */
    ASSERT_EQ(r.gates[1].major, 507);
    ASSERT_EQ(r.gates[1].nminors, 2);
    ASSERT_EQ(r.gates[1].minors[0], 0);
    ASSERT_EQ(r.gates[1].minors[1], 1);
    /* None of them the task's: the control devices only. */
    ASSERT_EQ(al__devrule_read(&r, dir, 3, 0), 2);
    ASSERT_EQ(r.gates[0].nminors, 2);
    ASSERT_EQ(r.gates[0].minors[0], 255);
    static const char *const names[] = { "nvidia0",   "nvidia1",
                                         "nvidia2",   "nvidiactl",
                                         "nvidia-uvm", "nvidia-uvm-tools" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void
verifier_accepts(void)
{
    if (geteuid() != 0)
        return; /* loading needs CAP_BPF and CAP_SYS_ADMIN */
    al__devrule_t r = two_gates(), none;
    memset(&none, 0, sizeof none);
    const al__devrule_t *rules[] = { &r, &none };
    for (size_t i = 0; i < 2; i++) {
        size_t n;
        struct bpf_insn *p = al__devbpf_build(rules[i], &n);
        char *cause = NULL;
        int fd = -1, rc = al__devbpf_load(p, n, &fd, &cause);
        free(p);
        if (rc == AL_ENOTSUP && cause != NULL &&
            strstr(cause, "verifier") == NULL) {
            free(cause); /* a kernel without BPF (or in a sandbox) */
            return;
        }
        if (rc != 0)
            fprintf(stderr, "%s\n", cause);
        ASSERT_EQ(rc, 0);
        ASSERT(fd >= 0);
        close(fd);
    }
    /* A program with a jump past its end is refused, the verifier's
     * words in the cause. */
    size_t n;
    struct bpf_insn *p = al__devbpf_build(&r, &n);
    p[5].off = 100;
    char *cause = NULL;
    int fd = -1;
    ASSERT(al__devbpf_load(p, n, &fd, &cause) != 0);
    free(p);
    ASSERT_EQ(fd, -1);
    ASSERT(strstr(cause, "the verifier said") != NULL);
    free(cause);
}

const al_test_t test_devbpf[] = {
    { "program_of_rule", program_of_rule },
    { "program_gates_nothing", program_gates_nothing },
    { "rule_from_nodes", rule_from_nodes },
    { "verifier_accepts", verifier_accepts },
    { NULL, NULL },
};

#else /* not Linux: nothing to test */

#include "test.h"

const al_test_t test_devbpf[] = {
    { NULL, NULL },
};

#endif
