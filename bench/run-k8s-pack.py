#!/usr/bin/env python3
"""Scale replay on a real control plane: the openb default trace's 1,213 GPU nodes as Node
objects, its pods submitted one at a time in `gpuslice pack`'s arrival order (seed, inflate
1.3), placed by the gpuslice scheduler (profile gpuslice-scheduler, the policy given) and
then by the default kube-scheduler (its default profile, GPUs as the per-node extended
resource gpuslice.io/gpu-milli), on the same control plane one after the other. Prints one
JSON line per run (gpuslice-k8s-replay's) and a Markdown table beside `gpuslice pack`.

Usage: bench/run-k8s-pack.py [--policy fgd] [--seed 42] [--bin DIR] [--limit N]
--bin: a directory with etcd, kube-apiserver, kube-scheduler, kubectl, gpuslice-scheduler
and gpuslice-k8s-replay (default: what integrations/k8s/hack/build.sh prints; it builds
all of them). Starts the control plane with cluster.sh (GS_K8S_CONTROL_ONLY=1,
no root) and stops it at the end."""
import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "integrations" / "k8s" / "hack" / "cluster.sh"
DATA = ROOT / "data" / "alibaba-openb"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--bin", default=None)
    ap.add_argument("--limit", type=int, default=0)
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
    runs = []
    try:
        for i, sched in enumerate(["gpuslice-scheduler", "default-scheduler"]):
            args = [str(bindir / "gpuslice-k8s-replay"), "--data", str(DATA), "--scheduler-name", sched,
                    "--policy", a.policy, "--seed", str(a.seed), "--namespace", f"replay-{i}",
                    "--limit", str(a.limit)]
            if i == 0:
                args.append("--create-nodes")
            r = subprocess.run(args, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"run-k8s-pack: replay with {sched} failed: {r.stderr.strip()}")
            runs.append(json.loads(r.stdout))
            print(r.stdout.strip())
            # Empty the nodes for the next scheduler: no kubelet, so a forced deletion.
            subprocess.run(["kubectl", "delete", "pods", "-n", f"replay-{i}", "--all", "--grace-period=0",
                            "--force", "--wait=true"], env=env, capture_output=True, text=True, check=True)
    finally:
        subprocess.run(["bash", str(CLUSTER), "down"], env=env, capture_output=True, text=True)
    print("\n| scheduler | pods | bound | unschedulable | per-GPU misfits | gpu_alloc_ratio | frag_ratio | pods/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['scheduler']} | {r['arrivals']} | {r['pods_bound']} | {r['pods_unschedulable']} | "
              f"{r['per_gpu_misfits']} | {100 * r['gpu_alloc_ratio']:.2f}% | {100 * r['frag_ratio']:.2f}% | "
              f"{r['pods_per_second']:.1f} |")
    r = runs[0]
    if a.limit:
        return  # pack's figures are for the whole arrival list
    print(f"| `gpuslice pack --policy {a.policy} --seed {a.seed}` | {r['arrivals']} | {r['pack_pods_placed']} | | | "
          f"{100 * r['pack_gpu_alloc_ratio']:.2f}% | {100 * r['pack_frag_ratio']:.2f}% | |")


if __name__ == "__main__":
    main()
