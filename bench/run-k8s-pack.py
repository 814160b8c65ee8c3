#!/usr/bin/env python3
"""Scale replay on a real control plane: the openb default trace's 1,213 GPU nodes as kwok's
Node objects (kwok's controller keeps them Ready and runs their pods; no kubelet), its pods submitted one at a time in `gpuslice pack`'s arrival order (seed, inflate
1.3), placed by the gpuslice scheduler (profile gpuslice-scheduler, the policy given) and
then by the default kube-scheduler (its default profile, GPUs as the per-node extended
resource gpuslice.io/gpu-milli), on the same control plane one after the other. Prints one
JSON line per run (gpuslice-k8s-replay's) and a Markdown table beside `gpuslice pack`.
Then the scheduler benchmark on the same nodes (gpuslice-k8s-replay --burst): the first
--burst arrivals submitted at once to each scheduler in turn, --rounds times, alternating;
pods decided (bound or unschedulable) per second, from the first create to the last
decision, one JSON line and a table.

Usage: bench/run-k8s-pack.py [--policy fgd] [--seed 42] [--bin DIR] [--limit N]
                             [--burst 2000] [--rounds 3] [--no-replay] [--no-burst]
--bin: a directory with etcd, kube-apiserver, kube-scheduler, kubectl, gpuslice-scheduler,
kwok and gpuslice-k8s-replay, and kwok's stages in DIR/../share/kwok (default: what
integrations/k8s/hack/build.sh prints; it builds all of them). Starts the control plane with cluster.sh (GS_K8S_CONTROL_ONLY=1,
no root) and stops it at the end."""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "integrations" / "k8s" / "hack" / "cluster.sh"
DATA = ROOT / "data" / "alibaba-openb"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--bin", default=None)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--no-burst", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ, GS_K8S_CONTROL_ONLY="1", GS_K8S_POLICY=a.policy, GS_K8S_TIE_SEED=str(a.seed),
               GS_K8S_WORKLOAD=str(DATA / "openb_pod_list_default.csv"),
               GS_K8S_CLUSTER=f"/tmp/gs-k8s-pack-{os.getpid()}")
    if a.bin:
        env["GS_K8S_BIN"] = a.bin
    up = subprocess.run(["bash", str(CLUSTER), "up"], env=env, capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit(f"run-k8s-pack: cluster.sh up failed:\n{up.stderr}")
    for kv in up.stdout.strip().splitlines()[-1][len("export "):].split():
        k, v = kv.split("=", 1)
        env[k] = v.replace("$PATH", os.environ["PATH"])
    bindir = pathlib.Path(env["PATH"].split(":")[0])
    runs, burst = [], None
    replay = [str(bindir / "gpuslice-k8s-replay"), "--data", str(DATA), "--policy", a.policy, "--seed", str(a.seed)]
    try:
        # The nodes, and kwok's time to have them all Ready, with the first replay, or alone.
        nodes = [] if not a.no_replay else ["--namespace", "nodes", "--limit", "1"]
        if nodes:
            run(replay + ["--create-nodes", "--scheduler-name", "gpuslice-scheduler"] + nodes, env)
            delete_pods(env, "nodes")
        for i, sched in enumerate([] if a.no_replay else ["gpuslice-scheduler", "default-scheduler"]):
            args = replay + ["--scheduler-name", sched, "--namespace", f"replay-{i}", "--limit", str(a.limit)]
            if i == 0:
                args.append("--create-nodes")
            runs.append(run(args, env))
            # Empty the nodes for the next scheduler.
            delete_pods(env, f"replay-{i}")
        if not a.no_burst:
            burst = run(replay + ["--burst", str(a.burst), "--rounds", str(a.rounds)], env)
    finally:
        subprocess.run(["bash", str(CLUSTER), "down"], env=env, capture_output=True, text=True)
    if runs:
        replay_table(runs, a)
    if burst:
        print("\n| scheduler | round | pods | bound | unschedulable | seconds | pods/s |")
        print("|---|---|---|---|---|---|---|")
        for r in burst["runs"]:
            print(f"| {r['scheduler']} | {r['round']} | {r['pods']} | {r['pods_bound']} | {r['pods_unschedulable']} | "
                  f"{r['seconds']:.2f} | {r['pods_per_second']:.1f} |")
        for k, v in burst["median_pods_per_second"].items():
            print(f"| {k}, median | | | | | | {v:.1f} |")


def run(args, env):
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run-k8s-pack: {' '.join(args[1:])} failed: {r.stderr.strip()}")
    print(r.stdout.strip(), flush=True)
    return json.loads(r.stdout)


def delete_pods(env, ns):
    """Deletes the namespace's pods at once and polls until they are gone: kubectl's --wait
    waits for each pod in turn, which took more than 7 minutes for 8,395 pods."""
    subprocess.run(["kubectl", "delete", "pods", "-n", ns, "--all", "--grace-period=0", "--force", "--wait=false"],
                   env=env, capture_output=True, text=True, check=True)
    for _ in range(600):
        left = subprocess.run(["kubectl", "get", "pods", "-n", ns, "-o", "name"], env=env, capture_output=True,
                              text=True, check=True).stdout.split()
        if not left:
            time.sleep(2)  # the schedulers' caches follow their watches
            return
        time.sleep(1)
    sys.exit(f"run-k8s-pack: pods of {ns} still there after 10 minutes")


def replay_table(runs, a):
    print("\n| scheduler | pods | bound | running | unschedulable | per-GPU misfits | gpu_alloc_ratio | frag_ratio | pods/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['scheduler']} | {r['arrivals']} | {r['pods_bound']} | {r['pods_running']} | {r['pods_unschedulable']} | "
              f"{r['per_gpu_misfits']} | {100 * r['gpu_alloc_ratio']:.2f}% | {100 * r['frag_ratio']:.2f}% | "
              f"{r['pods_per_second']:.1f} |")
    r = runs[0]
    if a.limit:
        return  # pack's figures are for the whole arrival list
    print(f"| `gpuslice pack --policy {a.policy} --seed {a.seed}` | {r['arrivals']} | {r['pack_pods_placed']} | | | | "
          f"{100 * r['pack_gpu_alloc_ratio']:.2f}% | {100 * r['pack_frag_ratio']:.2f}% | |")

if __name__ == "__main__":
    main()
