#!/usr/bin/env python3
"""Convert the Alibaba openb trace (FGD, USENIX ATC '23) for `allot sim`.

    tools/openb_nodes.py [--traces DIR] [--all-nodes] --cluster OUT.txt
                         [--pods OUT.csv]

--cluster writes the node list as an `allot sim --cluster` file: one node
group per distinct (GPUs, model, CPU, memory), e.g.

    group name=g2-8-96c-384g count=549 gpus=8 model=G2 cpus=96 mem_gib=384

By default the 1,213 GPU nodes (raw/openb_node_list_gpu_node.csv, the
cluster FGD simulated); --all-nodes adds the 310 CPU-only nodes.

--pods writes the default pod list in the common trace CSV with fractional
GPUs kept (num_gpus = gpu_milli / 1000 for a GPU-sharing pod, as
`convert.py --openb-fractional-gpus` does) and num_cpus = cpu_milli / 1000.
Memory and gpu_spec are not carried: the common format has no column for
them (gpu_spec is empty in every row of the default list).

Standard library only.
"""
import argparse
import collections
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACES = os.path.join(HERE, "..", "data", "traces")


def read_nodes(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_cluster(nodes, out, source):
    groups = collections.OrderedDict()
    for n in nodes:
        key = (int(n["gpu"]), n["model"].strip(), int(n["cpu_milli"]),
               int(n["memory_mib"]))
        groups[key] = groups.get(key, 0) + 1
    total_gpus = sum(k[0] * c for k, c in groups.items())
    with open(out, "w") as f:
        f.write(f"# openb node list ({source}): {len(nodes)} nodes, "
                f"{total_gpus} GPUs, {len(groups)} groups.\n")
        f.write("# Written by tools/openb_nodes.py; format: "
                "docs/simulation.md.\n")
        for (gpus, model, cpu, mem), count in sorted(
                groups.items(), key=lambda kv: (-kv[1], kv[0])):
            name = (f"{(model or 'cpu').lower()}-{gpus}-{cpu // 1000}c-"
                    f"{mem // 1024}g")
            words = [f"group name={name}", f"count={count}", f"gpus={gpus}"]
            if model:
                words.append(f"model={model}")
            words.append(f"cpus={cpu / 1000:g}")
            words.append(f"mem_gib={mem / 1024:g}")
            f.write(" ".join(words) + "\n")
    return len(nodes), total_gpus, len(groups)


def write_pods(src, out):
    n = 0
    with open(src, newline="") as f, open(out, "w", newline="") as g:
        w = csv.writer(g, lineterminator="\n")
        w.writerow(["job_id", "submit_time_s", "duration_s", "num_gpus",
                    "num_cpus", "user", "queue", "status"])
        for r in csv.DictReader(f):
            ngpu, milli = int(r["num_gpu"]), int(r["gpu_milli"])
            if ngpu == 1 and 0 < milli < 1000:
                gpus = f"{milli / 1000:g}"
            else:
                gpus = str(ngpu)
            created = int(r["creation_time"])
            deleted = int(r["deletion_time"])
            started = r["scheduled_time"].strip()
            start = int(started) if started else created
            w.writerow([r["name"], created, max(0, deleted - start), gpus,
                        f"{int(r['cpu_milli']) / 1000:g}", "", r["qos"],
                        r["pod_phase"]])
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=DEFAULT_TRACES,
                    help="the traces folder (default data/traces)")
    ap.add_argument("--all-nodes", action="store_true",
                    help="include the CPU-only nodes")
    ap.add_argument("--cluster", help="write the cluster file here")
    ap.add_argument("--pods", help="write the pod list (common CSV) here")
    a = ap.parse_args()
    if not a.cluster and not a.pods:
        ap.error("nothing to do: give --cluster and/or --pods")
    raw = os.path.join(a.traces, "alibaba-openb-2023", "raw")
    if a.cluster:
        name = ("openb_node_list_all_node.csv" if a.all_nodes
                else "openb_node_list_gpu_node.csv")
        nodes = read_nodes(os.path.join(raw, name))
        n, g, k = write_cluster(nodes, a.cluster, name)
        print(f"{a.cluster}: {n} nodes, {g} GPUs in {k} groups",
              file=sys.stderr)
    if a.pods:
        n = write_pods(os.path.join(raw, "openb_pod_list_default.csv"),
                       a.pods)
        print(f"{a.pods}: {n} pods", file=sys.stderr)


if __name__ == "__main__":
    main()
