"""The daemon verbs against the real daemon on the simulated GPU: three tenants started by
`gpuslice run` with different limits show up in `ps --json` with those limits and what they hold,
in `gpus`, `top --once` and `usage`; a limit changed with `gpuslice set` applies at the tenant's
next allocation, and a limit set below what the tenant holds kills nothing."""
import json
import select
import subprocess

import pytest

from daemon_env import GIB, GPUSLICE, MIB, WORKLOAD, Daemon, Tenant, wait_for
from prometheus_server import cli, stop_process


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, interval=0.2).start()
    yield d
    d.stop()


def ps_json(d):
    r = cli(d, "ps", "--json")
    assert r.returncode == 0, r.stderr
    return {t["name"]: t for t in json.loads(r.stdout)["tenants"]}


def used(t, gpu=0):
    return next((g["vram_used_bytes"] for g in t["gpus"] if g["index"] == gpu), None)


def test_three_tenants_with_different_limits_in_ps_gpus_top_and_usage(daemon):
    d = daemon
    tenants = [Tenant(d, "alpha", ["--vram", "4GiB", "--compute", "40", "--label", "team=a"], GIB),
               Tenant(d, "beta", ["--vram", "25%", "--compute", "12.5", "--compute-policy", "cap", "--priority", "high",
                                  "--label", "team=b"], 512 * MIB),
               Tenant(d, "gamma", [], 256 * MIB)]
    try:
        want = {"alpha": GIB, "beta": 512 * MIB, "gamma": 256 * MIB}
        ts = wait_for(lambda: (lambda t: t if {n: used(x) for n, x in t.items()} == want else None)(ps_json(d)),
                      what="three tenants holding their memory")
        gpus = json.loads(cli(d, "gpus", "--json").stdout)["gpus"]
        table = cli(d, "ps").stdout.splitlines()
        top = cli(d, "top", "--once")
    finally:
        for t in tenants:
            t.end()
    total = gpus[0]["memory_total_bytes"]
    assert ts["alpha"]["limits"] == {**ts["alpha"]["limits"], "vram_bytes": 4 * GIB, "compute_pct": 40,
                                     "compute_policy": "share", "priority": "normal"}
    assert ts["alpha"]["labels"] == {"team": "a"}
    assert ts["alpha"]["state"] == "running" and ts["alpha"]["gpus"][0]["vram_limit_bytes"] == 4 * GIB
    assert abs(ts["beta"]["limits"]["vram_bytes"] - total // 4) < MIB
    assert (ts["beta"]["limits"]["compute_pct"], ts["beta"]["limits"]["compute_policy"],
            ts["beta"]["limits"]["priority"]) == (12.5, "cap", "high")
    assert ts["gamma"]["limits"]["vram_bytes"] is None and ts["gamma"]["limits"]["compute_pct"] is None
    assert ts["gamma"]["gpus"][0]["vram_limit_bytes"] is None
    assert gpus[0]["tenants"] == 3 and gpus[0]["memory_used_bytes"] >= GIB + 768 * MIB
    assert [ln.split()[0] for ln in table[1:]] == ["alpha", "beta", "gamma"]
    assert top.returncode == 0 and "3 tenant(s)" in top.stdout and "beta" in top.stdout

    rows = wait_for(lambda: {r["key"]: r for r in json.loads(cli(d, "usage", "--by", "label:team", "--since", "1h",
                                                                  "--json").stdout)["rows"]},
                    what="usage rows")
    assert {"a", "b"} <= set(rows) and rows["a"]["tenants"] == 1 and rows["a"]["wall_seconds"] > 0


def read_line(p, timeout=30):
    """The tenant script's next line, or a failure rather than a hang."""
    assert select.select([p.stdout], [], [], timeout)[0], "the tenant script printed nothing"
    return p.stdout.readline().strip()


SCRIPT = r'''
exec 3<&0
"$0" hold --bytes 1GiB <&3 >/dev/null &
for go in "$1" "$2"; do
  while [ ! -e "$go" ]; do sleep 0.05; done
  true | "$0" hold --bytes 512MiB >/dev/null 2>&1
  echo "alloc=$?"
done
wait
'''


def test_set_applies_at_next_allocation_and_never_kills(daemon, tmp_path):
    d = daemon
    go1, go2 = tmp_path / "go1", tmp_path / "go2"
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", "live", "--vram", "4GiB", "--", "sh", "-c", SCRIPT,
                          str(WORKLOAD), str(go1), str(go2)], env=d.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: used(ps_json(d).get("live", {"gpus": []})) == GIB, what="the tenant holding 1 GiB")
        go1.touch()
        assert read_line(p) == "alloc=0"  # 1 GiB + 512 MiB fits under 4 GiB

        r = cli(d, "set", "live", "--vram", "1280MiB")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("live: vram 1.2 GiB")
        go2.touch()
        assert read_line(p) == "alloc=1"  # the same allocation now exceeds the limit

        r = cli(d, "set", "live", "--vram", "512MiB")  # below what it holds
        assert r.returncode == 0, r.stderr
        t = ps_json(d)["live"]
        assert t["state"] == "running" and used(t) == GIB and t["gpus"][0]["vram_limit_bytes"] == 512 * MIB
        assert p.poll() is None
        p.stdin.close()
        assert p.wait(timeout=30) == 0
    finally:
        stop_process(p)
