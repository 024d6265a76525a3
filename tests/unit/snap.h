/*
 * snap.h -- a builder that makes scheduling snapshots easy to write in tests.
 *
 * The builder owns every byte of the snapshot it builds: nodes and their
 * devices, queues, jobs with their placements and dependencies, and copies of
 * every string handed to it.  Indices returned by snap_node(), snap_queue()
 * and snap_job() are the indices the core sees.  Pointers returned by the
 * *_ref() functions stay valid until the next snap_node(), snap_queue() or
 * snap_job() call (the arrays may move).  snap_get() returns a snapshot that
 * stays valid until the builder is changed or destroyed; calling it again
 * after changes refreshes every internal pointer.
 *
 * Tests are not expected to survive running out of memory: the builder
 * aborts when malloc fails.
 */
#ifndef AL_TEST_SNAP_H
#define AL_TEST_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define SNAP_GIB ((int64_t)1 << 30)

typedef struct snap snap_t;

/* A builder at now = 0 with the core's default configuration. */
snap_t *snap_create(void);
/* Releases the builder and everything it built; NULL is a no-op. */
void snap_destroy(snap_t *s);

/* The configuration the snapshot points to, for the test to change. */
al_config_t *snap_config(snap_t *s);
void snap_set_now(snap_t *s, int64_t now);
void snap_set_allocator(snap_t *s, const al_allocator_t *a);
/* Sets the names of the topology levels, outermost first. */
void snap_topo_levels(snap_t *s, int n, const char *const *names);

/*
 * Adds a ready node with ngpus devices of 80 GiB each (NUMA 0, NVLink domain
 * 0: one fully connected box), 128 cores and 1 TiB of memory.
 */
int snap_node(snap_t *s, const char *name, int ngpus);
al_node_t *snap_node_ref(snap_t *s, int node);
al_device_t *snap_dev(snap_t *s, int node, int dev);
/* Sets topology level `level` of the node to a copy of value. */
void snap_node_topo(snap_t *s, int node, int level, const char *value);
void snap_node_pool(snap_t *s, int node, const char *pool);
void snap_node_model(snap_t *s, int node, const char *model);

/*
 * Adds a queue under parent (-1 for top level) with a GPU quota (milli-GPUs,
 * limit AL_UNLIMITED for none) and an over-quota weight; CPU and memory get
 * deserved 0, no limit and the same weight.
 */
int snap_queue(snap_t *s, const char *name, int parent, int64_t deserved_gpu,
               double weight, int64_t limit_gpu);
al_queue_t *snap_queue_ref(snap_t *s, int q);
void snap_queue_model_quota(snap_t *s, int q, const char *model,
                            int64_t deserved, int64_t limit);

/*
 * Adds a pending, preemptible train job of ntasks tasks with `gpus` whole
 * GPUs each, no CPU or memory request, id 1000 + index and submit time equal
 * to its index (so that creation order is submit order).
 */
int snap_job(snap_t *s, int queue, int ntasks, int gpus);
/* A pending single-task fractional job: milli of a GPU and/or gpu_mem bytes. */
int snap_job_frac(snap_t *s, int queue, int32_t milli, int64_t gpu_mem);
/* A pending non-preemptible build session of ntasks x gpus. */
int snap_job_build(snap_t *s, int queue, int ntasks, int gpus);
al_job_t *snap_job_ref(snap_t *s, int job);
/* Adds a dependency edge: job runs after `on`. */
void snap_job_dep(snap_t *s, int job, int on);
/* The same, an edge of the given kind (a failure or always edge). */
void snap_job_dep_when(snap_t *s, int job, int on, al_dep_when_t when);
void snap_job_pool(snap_t *s, int job, const char *pool);
void snap_job_model(snap_t *s, int job, const char *model);

/*
 * Appends a task placement to a job and marks it running since `start`.
 * snap_place() places a whole-GPU task on the devices of mask `devices`;
 * snap_place_frac() a fractional task on one device.
 */
void snap_place(snap_t *s, int job, int64_t start, int node, uint64_t devices);
void snap_place_frac(snap_t *s, int job, int64_t start, int node, int dev,
                     int32_t milli, int64_t gpu_mem);
/* Removes a job's placements and makes it pending again. */
void snap_unplace(snap_t *s, int job);

int snap_njobs(const snap_t *s);
int snap_nnodes(const snap_t *s);
int snap_nqueues(const snap_t *s);

/* The snapshot as it stands (see the comment at the top). */
al_snapshot_t *snap_get(snap_t *s);
/* The snapshot without refreshing its pointers: for tests that corrupt
 * them after snap_get(). */
al_snapshot_t *snap_peek(snap_t *s);

/*
 * Applies a result as a shell would, at time now: started jobs run with
 * their placements, evicted jobs go back to pending (requeue) or are held
 * (no requeue), shrunk jobs lose their last tasks.  The builder's now is set
 * to `now`.
 */
void snap_apply(snap_t *s, const al_result_t *r, int64_t now);

/* Result helpers. */
const al_decision_t *res_find(const al_result_t *r, int job,
                              al_decision_kind_t kind);
int res_count(const al_result_t *r, al_decision_kind_t kind);
/* Number of tasks placed on `node` by the START decision of job, or -1. */
int res_tasks_on(const al_result_t *r, int job, int node);
/* OR of the device masks the START decision of job uses on node. */
uint64_t res_devices_on(const al_result_t *r, int job, int node);
/* Runs the cycle, failing the calling test unless it returns 0. */
al_result_t *snap_run(snap_t *s);
/*
 * Compares two results field by field (decisions with their placements,
 * reservations, reasons, queue shares, stats).  Returns 0 when they are
 * identical, else -1 with the first difference described in why.
 */
int res_diff(const al_result_t *a, const al_result_t *b, char *why, size_t len);
/* Prints a snapshot to stderr, as C-like text, for diagnosing failures. */
void snap_dump(const al_snapshot_t *s);
/* Prints to stderr the builder calls that rebuild snapshot s into a snap_t
 * named `s`: a failing case, ready to paste into a test. */
void snap_emit_c(const al_snapshot_t *s);
/* Prints a result to stderr (for diagnosing failures). */
void res_dump(const al_snapshot_t *snap, const al_result_t *r);

#endif /* AL_TEST_SNAP_H */
