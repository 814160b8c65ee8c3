"""What the ledger shows of a tenant's compute: gpu_ns (device time used), throttled_ns (time
spent waiting at the gate) and share_ppm (its share over the last accounting window), read
from the ledger file while `gpuslice run` is alive, as `gpuslice ps` and the daemon read it.
Each tenant's command is a shell that runs the workload and then waits for its stdin to
close, so the ledger outlives the workload until the test has read it."""
import time

import pytest

from compute_util import Group, Tenant, pct_args, read_ledger
from quota_env import quota_env

WAIT = ["sh", "-c", '"$@"; rc=$?; read _; exit $rc', "sh", "{}"]
GPU_NS_TOLERANCE = 0.05   # relative


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def started(env, specs, window=5.0, busy=(), kernel_us=1000):
    """Tenants named a, b, ... started together; each waits after its workload."""
    tenants = [Tenant(["--name", chr(ord("a") + i)] + opts, busy, kernel_us=kernel_us, wrap=WAIT)
               for i, opts in enumerate(specs)]
    return Group(env, tenants, window=window).start()


def lone(env, opts, **kw):
    """One tenant, a, run to its end (started's keywords): its workload's line and its ledger's
    GPU 0, read before its `gpuslice run` ends."""
    g = started(env, [opts], **kw)
    try:
        [line] = g.read_lines()
        [d] = [read_ledger(env, "a")["gpu"][0]]
        g.finish()
    finally:
        g.kill()
    return line, d


def sleep_until_ns(t):
    while time.monotonic_ns() < t:
        time.sleep(min(0.05, (t - time.monotonic_ns()) / 1e9 + 0.001))


def true_gpu_ns(line):
    """The device time the tenant's kernels took: each sim_busy kernel runs exactly --kernel-us."""
    return line["requested_kernel_seconds"] * 1e9


def test_ledger_counts_device_time_and_throttling_of_capped_tenants(env):
    g = started(env, [pct_args(70, "cap"), pct_args(30, "cap")])
    try:
        sleep_until_ns(g.win_start + 3 * 10**9)
        mid = [read_ledger(env, n)["gpu"][0] for n in "ab"]
        lines = g.read_lines()
        done = [read_ledger(env, n)["gpu"][0] for n in "ab"]
        g.finish()
    finally:
        g.kill()
    print(f"\n[compute] ledger mid-run share_ppm {[m['share_ppm'] for m in mid]}, "
          f"gpu_ns {[d['gpu_ns'] for d in done]} vs true {[int(true_gpu_ns(x)) for x in lines]}, "
          f"throttled_ns {[d['throttled_ns'] for d in done]}")
    for want_ppm, m in zip((700000, 300000), mid):
        assert m["share_ppm"] == pytest.approx(want_ppm, abs=50000), mid
    for d, line in zip(done, lines):
        assert d["gpu_ns"] == pytest.approx(true_gpu_ns(line), rel=GPU_NS_TOLERANCE)
        # Saturating the device against a cap: the gate held it back, and said so.
        assert d["throttled_ns"] > 0
    # The 30% tenant waited longer than the 70% one.
    assert done[1]["throttled_ns"] > done[0]["throttled_ns"]


def test_lone_share_tenant_is_counted_and_never_throttled(env):
    line, d = lone(env, pct_args(50, "share"), window=3.0)
    assert d["gpu_ns"] == pytest.approx(true_gpu_ns(line), rel=GPU_NS_TOLERANCE)
    # Nobody else wanted the device: a share tenant never waits at the gate for nothing.
    assert d["throttled_ns"] <= 0.01 * line["wall_seconds"] * 1e9, d


@pytest.mark.parametrize("launch", ["plain", "ex", "coop", "graph"])
def test_lone_share_tenant_launching_short_kernels_is_counted_on_every_launch_path(env, launch):
    """Kernels of 20 us, four in flight: most launches come within the gate's gap of the one
    before, while the tenant holds its turn, and take the gate's fast path, which counts them
    before jumping to the driver (preload/hook-launch.c). A launch passed uncounted would go
    unmeasured: the device time charged is never less than the kernels' (their own events).
    Nor is it more than the run's wall time. Between the two: the gate counts a stream idle
    for less than its gap (20 us) as busy, which on a quiet machine is within 1% here, and
    when the simulator's device thread is starved of CPU (a loaded host) far more."""
    line, d = lone(env, pct_args(50, "share"), window=3.0, busy=["--launch", launch], kernel_us=20)
    events_ns = line["kernel_seconds"] * 1e9
    print(f"\n[compute] lone share tenant, 20 us kernels, {launch}: gpu_ns {d['gpu_ns']}, the kernels' "
          f"events {events_ns:.0f}, wall {line['wall_seconds'] * 1e9:.0f} ({line['kernels']} kernels)")
    assert line["kernels"] > 10000
    assert d["gpu_ns"] >= (1 - GPU_NS_TOLERANCE) * events_ns
    assert d["gpu_ns"] <= (1 + GPU_NS_TOLERANCE) * line["wall_seconds"] * 1e9
