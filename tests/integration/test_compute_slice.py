"""--slice-ms: tenants take exclusive turns of N ms on the GPU. A tenant that launches one
short kernel at a time, next to a tenant that saturates the GPU, waits for the other's turn
to end, so its launch-to-completion latency grows with the turn's length. The turns are
exclusive: it never waits more than one turn."""
import subprocess

from quota_env import GPUSLICE, json_lines, quota_env
from wl_run import WORKLOAD

SECONDS = 3


def latency_next_to_saturating(tmp_path, slice_ms):
    (tmp_path / f"s{slice_ms}").mkdir()
    env = quota_env(tmp_path / f"s{slice_ms}")
    common = ["--compute", "50", "--slice-ms", str(slice_ms)]
    hog = subprocess.Popen([GPUSLICE, "run", "--name", "hog"] + common +
                           ["--", WORKLOAD, "busy", "--seconds", str(SECONDS + 1), "--kernel-us", "500"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        probe = subprocess.run([GPUSLICE, "run", "--name", "probe"] + common +
                               ["--", WORKLOAD, "busy", "--seconds", str(SECONDS), "--duty", "0.1",
                                "--kernel-us", "200", "--latency"],
                               env=env, capture_output=True, text=True, timeout=60)
    finally:
        out, err = hog.communicate(timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert hog.returncode == 0, err
    return json_lines(probe.stdout)[-1]


def test_latency_follows_the_turn_length(tmp_path):
    short = latency_next_to_saturating(tmp_path, 4)
    long = latency_next_to_saturating(tmp_path, 40)
    # With 40 ms turns the probe waits on average about half a turn of the hog's; with 4 ms
    # turns ten times less. The factor asked here is far below ten, to stay clear of noise.
    assert long["latency_p50_us"] > 3 * short["latency_p50_us"], (short, long)
    # Exclusive turns: never more than one of the hog's turns (plus its drain and the kernel).
    assert long["latency_max_us"] < 40_000 + 5_000 + 200 + 20_000, long
    assert long["latency_p50_us"] > 5_000, long


def test_slice_ms_rejects_bad_values(tmp_path):
    env = quota_env(tmp_path)
    for bad in ["0", "abc", "10001", "-3", "1.5"]:
        r = subprocess.run([GPUSLICE, "run", "--slice-ms", bad, "--", "true"], env=env,
                           capture_output=True, text=True)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.count("\n") == 1 and f"'{bad}'" in r.stderr, r.stderr
