"""The launch path when no gating is needed (issue #17). While no tenant on a GPU has a compute
limit or a priority, and the tenant itself has none, its launches are not gated at all: the
interposer looks at the board's gating word and its limits' generation, nothing else, and
claims no row. A change to either takes effect at the next launch of every tenant: a neighbour
that arrives with a limit, or a limit set live with `gpuslice set`. The current GPU and its
gate are cached per thread and forgotten whenever the thread's current context changes. The
daemon counts an ungated tenant's device time from NVML (smUtil), since its gate measures
nothing. Everything here runs on the simulated GPU."""
import itertools
import json
import os
import pathlib
import signal
import subprocess
import time

import pytest

from compute_util import BOARD_ROW_AT, BOARD_ROW_SIZE, board_header, board_row, measure_until, read_ledger
from conftest import SIMLIB, run
from daemon_env import Daemon, wait_for
from quota_env import GPUSLICE, quota_env, state_dir
from wl_run import WORKLOAD

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
ABI = REPO / "abi"
PTX = REPO / "sim" / "workload" / "kernels-ptx.c"
GATING_AT = 192         # struct gs_board's gating word (include/gpuslice/compute.h)
WAIT = ["sh", "-c", '"$@"; rc=$?; read _; exit $rc', "sh"]   # keeps `run`'s ledger until stdin closes
TOLERANCE = 4.0         # percentage points


def gating(board):
    """(generation, needed) of a board file's gating word."""
    w = int.from_bytes(board.read_bytes()[GATING_AT:GATING_AT + 4], "little")
    return w >> 1, bool(w & 1)


def rows(board):
    """Tenant names of the live rows of a board file."""
    raw = board.read_bytes()
    n = board_header(raw)["rows_used"]
    return {name for state, name in (board_row(raw, i) for i in range(n)) if state == 2}


def the_board(env, index=0):
    """GPU `index`'s board file in env's state dir (boards are named by UUID; the simulator's
    UUIDs sort as their indices do not, so it is found through the workload's info)."""
    r = run([WORKLOAD, "info"], env=env)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.splitlines()[0])
    uuid = info["devices"][index]["uuid"]
    return state_dir(env) / "gpus" / uuid


def busy(name, opts, start_ns, seconds, window=None, duty=1.0):
    """`gpuslice run --name NAME OPTS -- gpusim-workload busy ...` starting at start_ns; with a
    window (start, end), it reports its device time inside it."""
    args = [str(WORKLOAD), "busy", "--kernel-us", "1000", "--duty", str(duty), "--seconds", f"{seconds:.3f}",
            "--start-at-ns", str(start_ns)]
    if window:
        args += ["--window-start-ns", str(window[0]), "--window-end-ns", str(window[1])]
    return [str(GPUSLICE), "run", "--name", name] + [str(o) for o in opts] + ["--"] + args


def finish(procs, timeout=120):
    lines = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, (p.args, out, err)
        lines.append(next(json.loads(x) for x in out.splitlines() if x.startswith("{") and '"busy"' in x))
    return lines


def share(line, window):
    return 100.0 * line["window_kernel_seconds"] / ((window[1] - window[0]) / 1e9)


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def test_tenants_without_compute_limits_launch_ungated_and_claim_no_row(env):
    t0 = time.monotonic_ns() + int(1.5e9)
    procs = [subprocess.Popen(busy(n, ["--vram", "4Gi"], t0, 3.0), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in ("a", "b")]
    try:
        board = the_board(env)
        wait_for(lambda: board.exists() and time.monotonic_ns() > t0 + 1e9, what="both tenants launching")
        gen, needed = gating(board)
        seen = rows(board)
    finally:
        lines = finish(procs)
    assert not needed and seen == set(), (gen, needed, seen)
    # They did run: each got device time, the two together about all of it.
    assert all(x["kernels"] > 0 for x in lines), lines


def test_a_tenant_killed_while_busy_stops_gating_its_neighbours_at_once(env):
    """`gpuslice run` killed with its command (SIGTERM to the process group, as a shell or a
    job scheduler does) while the command takes turns: none of its processes is left, so its
    row goes at once, a turn it held handed back, and the GPU's launches are ungated again at
    once rather than once the row has been a minute stale."""
    p = subprocess.Popen(busy("capped", ["--compute", "50"], time.monotonic_ns(), 100.0), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        board = the_board(env)
        wait_for(lambda: board.exists() and "capped" in rows(board) and gating(board)[1], what="capped gating")
        time.sleep(0.5)
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 128 + signal.SIGTERM, p.stderr.read()
    assert rows(board) == set() and gating(board)[1] is False, (rows(board), gating(board))


def test_a_tenant_whose_process_outlives_its_run_keeps_its_row_while_it_competes(env):
    """The run's command leaves a busy child behind and exits: that child still takes turns,
    so the row stays (and gates) after the run ends."""
    cmd = f"{WORKLOAD} busy --kernel-us 1000 --seconds 100 >/dev/null & sleep 1.5"
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", "left", "--compute", "50", "--", "sh", "-c", cmd], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.wait(timeout=30) == 0, p.stderr.read()
        board = the_board(env)
        assert "left" in rows(board) and gating(board)[1] is True, (rows(board), gating(board))
    finally:
        os.killpg(p.pid, signal.SIGKILL)


def neighbour_joins(env):
    """a, with no limit, runs alone, then b arrives with a 70% share: (a's gating and rows
    while alone, both shares inside the window, the board's rows after both ended)."""
    now = time.monotonic_ns()
    a0, b0 = now + int(1.5e9), now + int(4.5e9)      # b arrives 3 s after a started
    window = (b0 + int(1.5e9), b0 + int(7.5e9))
    a = subprocess.Popen(busy("a", [], a0, (window[1] - a0) / 1e9, window), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        board = the_board(env)
        wait_for(lambda: board.exists() and time.monotonic_ns() > a0 + 1e9, what="a launching alone")
        alone = (gating(board), rows(board))
        b = subprocess.Popen(busy("b", ["--compute", "70"], b0, (window[1] - b0) / 1e9, window), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        la, lb = finish([a, b])
    finally:
        a.kill()
    got = [share(la, window), share(lb, window)]
    print(f"\n[compute] a (no limit) joined by b (70% share): {got[0]:.2f} / {got[1]:.2f}")
    return alone, got, rows(board)


def test_a_neighbour_arriving_with_a_limit_gates_a_running_tenant_at_its_next_launch(tmp_path):
    tries = itertools.count(1)
    held = lambda got: got[0] == pytest.approx(30, abs=TOLERANCE) and got[1] == pytest.approx(70, abs=TOLERANCE)
    alone, got, after = measure_until(lambda: neighbour_joins(quota_env(tmp_path / f"try{next(tries)}")),
                                      lambda r: held(r[1]), label="a joined by b at 70%")
    assert alone[0][1] is False and alone[1] == set(), alone   # a ran ungated, rowless
    assert got[0] == pytest.approx(30, abs=TOLERANCE), got
    assert got[1] == pytest.approx(70, abs=TOLERANCE), got
    assert after == set()   # both `run`s gave their rows back as they ended


def limit_set_live(root):
    """A tenant runs alone, then `gpuslice set` caps it at 30%: its share inside a window
    after the change."""
    d = Daemon(root, interval=0.2).start()
    try:
        now = time.monotonic_ns()
        start = now + int(1.5e9)
        before = (start + int(0.5e9), start + int(2.5e9))
        window = (start + int(4.5e9), start + int(9.5e9))
        p = subprocess.Popen(busy("live", [], start, (window[1] - start) / 1e9, window), env=d.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: time.monotonic_ns() > before[1], timeout=30, what="the tenant running alone")
        r = subprocess.run([str(GPUSLICE), "set", "live", "--compute", "30", "--compute-policy", "cap"],
                           env=d.env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        [line] = finish([p])
    finally:
        d.stop()
    got = share(line, window)
    print(f"\n[compute] set --compute 30 cap on a running tenant: {got:.2f}%")
    return got


def test_a_limit_set_live_gates_a_running_tenant_at_its_next_launch(tmp_path):
    tries = itertools.count(1)

    def measure():
        root = tmp_path / f"try{next(tries)}"
        root.mkdir()
        return limit_set_live(root)

    got = measure_until(measure, lambda g: g == pytest.approx(30, abs=TOLERANCE), label="cap 30 set live")
    assert got == pytest.approx(30, abs=TOLERANCE), got


def test_one_thread_switching_contexts_is_gated_on_each_current_gpu(tmp_path):
    """GPU 1 capped at 30% (HAMi's per-device variable), GPU 0 free; one thread goes back and
    forth with SetCurrent and Push/Pop. Its launches on GPU 1 are gated on GPU 1's board and
    charged there; those on GPU 0 pass ungated. A cache that missed a switch would charge one
    GPU's kernels to the other, or let GPU 1's through."""
    env = quota_env(tmp_path, "h100-80gb:2")
    probe = tmp_path / "ctx_switch_probe"
    cc = os.environ.get("CC", "cc")
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if "libasan" in run(
        ["ldd", str(SIMLIB / "libcuda.so.1")]).stdout else []
    r = run([cc, "-std=gnu11", "-O1", *san, "-I", ABI, HERE / "ctx_switch_probe.c", PTX, "-L", SIMLIB, "-lcuda",
             "-o", probe])
    assert r.returncode == 0, r.stderr
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", "switch", "--", *WAIT, str(probe), "4", "1000"],
                         env=dict(env, CUDA_DEVICE_SM_LIMIT_1="30"), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = json.loads(p.stdout.readline())
        ledger = read_ledger(env, "switch")["gpu"]
        boards = [the_board(env, i) for i in (0, 1)]
        named = [rows(b) if b.exists() else set() for b in boards]
        p.stdin.close()
        assert p.wait(timeout=60) == 0, p.stderr.read()
    finally:
        p.kill()
    k0, k1 = line["kernels"]
    true1 = k1 * line["kernel_us"] * 1000
    print(f"\n[compute] one thread on two GPUs: kernels {k0}/{k1}, GPU 1 charged {ledger[1]['gpu_ns']} ns "
          f"of {true1}, throttled {ledger[1]['throttled_ns']} ns; rows {named}")
    assert named == [set(), {"switch"}], named
    assert ledger[0]["gpu_ns"] == 0 and ledger[0]["throttled_ns"] == 0, ledger[0]
    assert ledger[1]["gpu_ns"] == pytest.approx(true1, rel=0.1), (ledger[1], true1)
    assert ledger[1]["throttled_ns"] > 0, ledger[1]
    assert 100.0 * true1 / 4e9 <= 30 + TOLERANCE, true1   # the cap held on GPU 1


def test_daemon_counts_an_ungated_tenants_device_time_from_nvml(tmp_path):
    d = Daemon(tmp_path, interval=0.2)
    d.env["GPUSIM_UTIL_PERIOD_MS"] = "100"
    d.start()
    try:
        start = time.monotonic_ns() + int(1.5e9)
        p = subprocess.Popen(busy("free", [], start, 4.0, duty=0.5), env=d.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        stdout = []
        t = wait_for(lambda: (lambda x: x if x["gpus"] and x["gpus"][0]["gpu_seconds"] > 0 else None)(
            d.tenants().get("free", {"gpus": []})), timeout=30, what="the tenant's device time")
        line = finish([p])[0]
        # Its end is written once the sampler sees it gone; the ledger keeps the count.
        counted = wait_for(lambda: (lambda r: r[0][0] if r and r[0][0] else None)(
            d.sql("SELECT MAX(gpu_ns_total) FROM intervals i JOIN tenants t ON i.tenant_id = t.id "
                  "WHERE t.name = 'free'")), what="the usage ledger's count")
    finally:
        d.stop()
    true_ns = line["requested_kernel_seconds"] * 1e9
    print(f"\n[compute] ungated tenant, device time from NVML: {counted} ns of {true_ns:.0f}")
    assert t["gpus"][0]["gpu_seconds"] > 0
    assert counted == pytest.approx(true_ns, rel=0.05)
