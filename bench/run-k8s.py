#!/usr/bin/env python3
"""What gpuslice adds to a pod on Kubernetes (issue #13), on the one-node test cluster
(integrations/k8s/hack/cluster.sh, the simulated H100):

  start   time from `kubectl apply` of a pod to its container running, without a claim (the
          baseline) and with a gpuslice claim (1 GiB, 1%): the scheduler's allocation, the
          agent's NodePrepareResources (a held tenant registered, a CDI spec written) and the
          runtime applying the spec. Rounds alternate the two, so drift on a shared machine hits
          both alike.
  agent   the agent's RSS (VmRSS, VmHWM) and CPU (utime+stime) while 50 claim pods start, and
          over a quiet window with the 50 running; the same for the daemon.

Needs root and the components build.sh makes. Prints a table and a JSON object on stdout.
Exit status: 0 when it ran, 1 when a step failed.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

TICK = os.sysconf("SC_CLK_TCK")


def proc_stats(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    status = dict(line.split(":", 1) for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines())
    kb = lambda k: int(status[k].split()[0]) / 1024.0  # noqa: E731
    return cpu, kb("VmRSS"), kb("VmHWM")


def pid_of(c, name):
    return int((c.dir / "pids" / name).read_text().split()[0])


def pod_running(c, name):
    st = c.get("pod", name)["status"]
    return any(s.get("state", {}).get("running") for s in st.get("containerStatuses", []))


def time_start(c, name, manifest, timeout=120):
    t0 = time.monotonic()
    c.apply(manifest)
    deadline = t0 + timeout
    while time.monotonic() < deadline:
        if pod_running(c, name):
            return time.monotonic() - t0
        time.sleep(0.05)
    raise RuntimeError(f"pod {name} not running after {timeout} s: {c.describe(name)}")


def plain_pod(name):
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: work
    image: gpuslice/workload:test
    imagePullPolicy: Never
    command: ["sleep", "3600"]
"""


def main():
    import test_k8s_cluster as k  # noqa: E402  (the test's cluster driver)

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="pods started per mode (default 10)")
    ap.add_argument("--pods", type=int, default=50, help="claim pods for the agent's figures (default 50)")
    ap.add_argument("--quiet-s", type=float, default=60.0, help="the quiet window, seconds (default 60)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("run-k8s: needs root (kubelet, containerd)", file=sys.stderr)
        return 1
    c = k.Cluster(pathlib.Path(f"/tmp/gpuslice-k8s-bench-{os.getpid()}"))
    out = {}
    try:
        c.up()
        c.apply(k.claim_template("bench-1g", "1Gi", "1"))
        times = {"no claim": [], "gpuslice claim": []}
        for r in range(a.rounds):
            for mode in (["no claim", "gpuslice claim"] if r % 2 == 0 else ["gpuslice claim", "no claim"]):
                name = f"start-{r}-{'c' if mode != 'no claim' else 'p'}"
                m = k.pod(name, "bench-1g", "exec sleep 3600") if mode != "no claim" else plain_pod(name)
                times[mode].append(time_start(c, name, m))
                c.kubectl("delete", "pod", name, "--wait=true", "--grace-period=0")
        base = statistics.median(times["no claim"])
        out["start"] = {m: {"median_s": statistics.median(v), "p90_s": sorted(v)[int(0.9 * (len(v) - 1))],
                            "ratio": statistics.median(v) / base, "samples_s": v} for m, v in times.items()}
        agent, daemon = pid_of(c, "gpuslice-k8s"), pid_of(c, "gpuslice-daemon")
        a0, d0 = proc_stats(agent), proc_stats(daemon)
        t0 = time.monotonic()
        c.apply("---\n".join(k.pod(f"many-{i}", "bench-1g", "exec sleep 3600") for i in range(a.pods)))
        k.wait_for(lambda: all(pod_running(c, f"many-{i}") for i in range(a.pods)), 900, what=f"{a.pods} pods running")
        t1 = time.monotonic()
        a1, d1 = proc_stats(agent), proc_stats(daemon)
        time.sleep(a.quiet_s)
        t2 = time.monotonic()
        a2, d2 = proc_stats(agent), proc_stats(daemon)
        tenants = len(c.ps())
        out["agent"] = {"pods": a.pods, "tenants": tenants, "start_window_s": t1 - t0,
                        "agent_cpu_pct_start": 100 * (a1[0] - a0[0]) / (t1 - t0),
                        "agent_cpu_pct_quiet": 100 * (a2[0] - a1[0]) / (t2 - t1),
                        "agent_rss_mb": a2[1], "agent_peak_rss_mb": a2[2],
                        "daemon_cpu_pct_quiet": 100 * (d2[0] - d1[0]) / (t2 - t1),
                        "daemon_rss_mb": d2[1], "daemon_peak_rss_mb": d2[2]}
    finally:
        c.script("down", 600)
    print("| pod start | median s | p90 s | / no claim |\n|---|---|---|---|")
    for m, v in out["start"].items():
        print(f"| {m} | {v['median_s']:.2f} | {v['p90_s']:.2f} | {v['ratio']:.2f} |")
    g = out["agent"]
    print(f"\n{g['pods']} claim pods ({g['tenants']} tenants) started in {g['start_window_s']:.1f} s; agent CPU "
          f"{g['agent_cpu_pct_start']:.2f}% of a core while they started, {g['agent_cpu_pct_quiet']:.2f}% over "
          f"{a.quiet_s:.0f} s with them running; agent RSS {g['agent_rss_mb']:.1f} MB (peak {g['agent_peak_rss_mb']:.1f}); "
          f"daemon CPU {g['daemon_cpu_pct_quiet']:.2f}%, RSS {g['daemon_rss_mb']:.1f} MB (peak {g['daemon_peak_rss_mb']:.1f})")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
