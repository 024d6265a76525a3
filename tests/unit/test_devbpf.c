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

/* An instruction: code, dst, src, off, imm. */
#define I(code_, dst, src, off_, imm_)                                         \
    {                                                                          \
        .code = (code_), .dst_reg = (dst), .src_reg = (src), .off = (off_),    \
        .imm = (imm_)                                                          \
    }
#define JNE (BPF_JMP | BPF_JNE | BPF_K)
#define JEQ (BPF_JMP | BPF_JEQ | BPF_K)
#define JA (BPF_JMP | BPF_JA)
#define LDXW (BPF_LDX | BPF_MEM | BPF_W)
#define AND (BPF_ALU | BPF_AND | BPF_K)
#define MOV (BPF_ALU64 | BPF_MOV | BPF_K)
#define EXIT (BPF_JMP | BPF_EXIT)

/* The n instructions at got are want's, field by field. */
static void
same_program(const struct bpf_insn *got, const struct bpf_insn *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(got[i].code, want[i].code);
        ASSERT_EQ(got[i].dst_reg, want[i].dst_reg);
        ASSERT_EQ(got[i].src_reg, want[i].src_reg);
        ASSERT_EQ(got[i].off, want[i].off);
        ASSERT_EQ(got[i].imm, want[i].imm);
    }
}

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
    /* 5 to read the context, 2 + 3 and 2 + 1 for the gates, 4 to end;
     * jumps count from the next instruction. */
    static const struct bpf_insn want[] = {
        I(LDXW, BPF_REG_2, BPF_REG_1, 0, 0), /* access_type */
        I(AND, BPF_REG_2, 0, 0, 0xffff),
        I(JNE, BPF_REG_2, 0, 10, BPF_DEVCG_DEV_CHAR), /* to allow (13) */
        I(LDXW, BPF_REG_3, BPF_REG_1, 4, 0),          /* major */
        I(LDXW, BPF_REG_4, BPF_REG_1, 8, 0),          /* minor */
        I(JNE, BPF_REG_3, 0, 4, 195),                 /* to the next major */
        I(JEQ, BPF_REG_4, 0, 6, 1),                   /* to allow */
        I(JEQ, BPF_REG_4, 0, 5, 255),
        I(JEQ, BPF_REG_4, 0, 4, 254),
        I(JA, 0, 0, 5, 0),            /* to deny (15) */
        I(JNE, BPF_REG_3, 0, 2, 500), /* to allow: not gated */
        I(JEQ, BPF_REG_4, 0, 1, 0),   /* to allow */
        I(JA, 0, 0, 2, 0),            /* to deny */
        I(MOV, BPF_REG_0, 0, 0, 1),   /* allow: */
        I(EXIT, 0, 0, 0, 0),
        I(MOV, BPF_REG_0, 0, 0, 0), /* deny: */
        I(EXIT, 0, 0, 0, 0),
    };
    ASSERT_EQ(n, sizeof want / sizeof *want);
    same_program(p, want, n);
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
    static const struct bpf_insn want[] = {
        I(LDXW, BPF_REG_2, BPF_REG_1, 0, 0),
        I(AND, BPF_REG_2, 0, 0, 0xffff),
        I(JNE, BPF_REG_2, 0, 2, BPF_DEVCG_DEV_CHAR),
        I(LDXW, BPF_REG_3, BPF_REG_1, 4, 0),
        I(LDXW, BPF_REG_4, BPF_REG_1, 8, 0),
        I(MOV, BPF_REG_0, 0, 0, 1),
        I(EXIT, 0, 0, 0, 0),
    };
    ASSERT_EQ(n, sizeof want / sizeof *want);
    same_program(p, want, n);
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

/* The nodes rule_from_nodes() makes. */
static const struct {
    const char *name;
    unsigned maj, min;
} nodes[] = {
    { "nvidia0", 195, 0 },    { "nvidia1", 195, 1 },
    { "nvidia2", 195, 2 },    { "nvidiactl", 195, 255 },
    { "nvidia-uvm", 507, 0 }, { "nvidia-uvm-tools", 507, 1 },
};
#define NNODES (sizeof nodes / sizeof *nodes)

/* Gate g lets through the n minors want, in that order. */
static void
same_gate(const struct al__devgate *g, unsigned major, const unsigned *want,
          int n)
{
    ASSERT_EQ(g->major, major);
    ASSERT_EQ(g->nminors, n);
    for (int i = 0; i < n; i++)
        ASSERT_EQ(g->minors[i], want[i]);
}

static void
rule_from_nodes(void)
{
    char dir[] = "/tmp/al-devbpf-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    al__devrule_t r;
    /* No GPU node: nothing to gate. */
    ASSERT_EQ(al__devrule_read(&r, dir, 2, 1), 0);
    size_t made = 0;
    while (made < NNODES &&
           node(dir, nodes[made].name, nodes[made].maj, nodes[made].min))
        made++;
    if (made == NNODES) { /* mknod needs root */
        /* GPUs 0 and 2 of 3 are the task's; nvidia-modeset's 254 by
         * number, though there is no such node. */
        ASSERT_EQ(al__devrule_read(&r, dir, 3, 5), 2);
        same_gate(&r.gates[0], 195, (const unsigned[]){ 0, 2, 255, 254 }, 4);
        same_gate(&r.gates[1], 507, (const unsigned[]){ 0, 1 }, 2);
        /* None of them the task's: the control devices only. */
        ASSERT_EQ(al__devrule_read(&r, dir, 3, 0), 2);
        same_gate(&r.gates[0], 195, (const unsigned[]){ 255, 254 }, 2);
    }
    for (size_t i = 0; i < made; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, nodes[i].name);
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
