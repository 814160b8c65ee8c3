"""The Slurm integration against a real one-node Slurm 22.05 cluster (issue #14): the
module's fixture starts it with integrations/slurm/hack/cluster.sh up (its own munged,
slurmctld and slurmd on loopback, the SPANK plugin from this build in plugstack.conf) and
stops it with cluster.sh down: one fake GPU of 4 shards, 8 CPUs. Tests that need the
node daemon start one of their own (node_daemon), whose socket the jobs' environment names.
Needs root, as slurmd does. The time-limit test takes 60 to 90 s of the file's two minutes or so."""
import json
import os
import pathlib
import socket
import struct
import subprocess
import time

import pytest

from conftest import BIN, BUILD, make_sim_env

REPO = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = REPO / "integrations" / "slurm" / "hack" / "cluster.sh"
PLUGIN = BUILD / "lib" / "gpuslice_spank.so"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, directory):
        self.dir = directory
        self.env = dict(os.environ)
        # One GPU of 4 shards (test_four_jobs_of_one_shard_...), and CPUs for more jobs at once
        # than the machine has cores.
        self.env.update(GS_SLURM_DIR=str(directory), GS_SLURM_CTLD_PORT=str(free_port()),
                        GS_SLURMD_PORT=str(free_port()), GS_SLURM_PLUGIN=str(PLUGIN),
                        GS_SLURM_GPUS="1", GS_SLURM_SHARDS="4", GS_SLURM_CPUS="8")

    def up(self):
        p = subprocess.run(["bash", str(CLUSTER), "up"], env=self.env, capture_output=True,
                           text=True, timeout=180)
        assert p.returncode == 0, f"cluster.sh up failed:\n{p.stderr}"
        last = p.stdout.strip().splitlines()[-1]
        assert last.startswith("export SLURM_CONF="), p.stdout
        self.env["SLURM_CONF"] = last.split("=", 1)[1]

    def down(self):
        subprocess.run(["bash", str(CLUSTER), "down"], env=self.env, timeout=120)

    def daemon_pids(self):
        """The pids cluster.sh up recorded for munged, slurmctld and slurmd."""
        files = [self.dir / "munge" / "munged.pid", self.dir / "slurmctld.pid", self.dir / "slurmd.pid"]
        return [int(f.read_text()) for f in files]

    def logs(self):
        out = []
        for f in sorted((self.dir / "log").glob("*.log")):
            out.append(f"----- {f}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-30:]))
        return "\n".join(out)

    def run(self, *args, timeout=60, **kw):
        return subprocess.run([str(a) for a in args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, **kw)

    def completed_jobs(self):
        """The jobs the job completion log (jobcomp/filetxt) holds, as {id: (name, state)}."""
        p = self.run("sacct", "-c", "-n", "-P", "-o", "jobid,jobname,state")
        assert p.returncode == 0, p.stderr
        jobs = {}
        for line in p.stdout.splitlines():
            jobid, name, state = line.split("|")[:3]
            jobs[jobid] = (name, state)
        return jobs


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.skip("starting slurmd and munged needs root (CI runs the tests as root)")
    c = Cluster(pathlib.Path(f"/tmp/gpuslice-slurm-test-{os.getpid()}"))
    pids = []
    try:
        c.up()
        pids = c.daemon_pids()
        yield c
    finally:
        c.down()
    assert not c.dir.exists(), "cluster.sh down left its directory"
    alive = [pid for pid in pids if pathlib.Path(f"/proc/{pid}").exists()]
    assert not alive, f"cluster.sh down left daemons running: {alive}"


def wait_until(pred, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.parametrize("var,value", [("GS_SLURM_GPUS", "abc"), ("GS_SLURM_CTLD_PORT", "68x7"),
                                       ("GS_SLURMD_PORT", "-1"), ("GS_SLURM_DIR", "relative/dir"),
                                       ("GS_SLURM_CPUS", "0"), ("GS_SLURM_SHARDS", "0")])
def test_cluster_sh_refuses_a_bad_setting_with_one_line_naming_it(tmp_path, var, value):
    env = dict(os.environ, GS_SLURM_DIR=str(tmp_path / "c"))
    env[var] = value
    p = subprocess.run(["bash", str(CLUSTER), "up"], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and var in p.stderr and f"'{value}'" in p.stderr, p.stderr
    assert not (tmp_path / "c").exists()


def test_srun_runs_a_step_on_the_node(cluster):
    p = cluster.run("srun", "hostname")
    assert p.returncode == 0, p.stderr + cluster.logs()
    assert p.stdout.strip() == socket.gethostname().split(".")[0]


def test_sbatch_job_finishes_and_sacct_c_lists_it(cluster):
    out = cluster.dir / "sbatch-wrap.out"
    p = cluster.run("sbatch", "--parsable", "-J", "gs-wrap", "-o", out, "--wrap", "echo wrapped")
    assert p.returncode == 0, p.stderr + cluster.logs()
    jobid = p.stdout.strip().split(";")[0]
    state = wait_until(lambda: cluster.completed_jobs().get(jobid), timeout=30,
                       what=f"job {jobid} in sacct -c")
    assert state == ("gs-wrap", "COMPLETED"), state
    assert out.read_text().strip() == "wrapped"


OPTIONS = ("--gpu-vram=SIZE", "--gpu-compute=PCT", "--gpu-compute-policy=share|cap",
           "--gpu-priority=high|normal|low")


@pytest.mark.parametrize("prog", ["srun", "sbatch", "salloc"])
def test_the_plugin_options_show_in_help(cluster, prog):
    assert PLUGIN.exists(), f"{PLUGIN} was not built (is libslurm-dev installed?)"
    p = cluster.run(prog, "--help")
    assert p.returncode == 0, p.stderr
    assert "Options provided by plugins:" in p.stdout, p.stdout[-2000:]
    for opt in OPTIONS:
        assert opt in p.stdout, f"{prog} --help does not list {opt}"


BAD = [
    ("--gpu-vram", "abc", "bad size 'abc': not a number"),
    ("--gpu-compute", "150", "'150' is not a percentage in (0, 100]"),
    ("--gpu-compute-policy", "capped", "'capped' is not cap or share"),
    ("--gpu-priority", "urgent", "'urgent' is not high, normal or low"),
]


def submit(cluster, prog, opts, name, marker):
    cmd = f"touch {marker}"
    if prog == "srun":
        return cluster.run("srun", "-J", name, *opts, "sh", "-c", cmd)
    if prog == "sbatch":
        return cluster.run("sbatch", "-J", name, "-o", "/dev/null", *opts, "--wrap", cmd)
    return cluster.run("salloc", "-J", name, *opts, "sh", "-c", cmd)


def jobs_named(cluster, name):
    q = cluster.run("squeue", "-h", "-n", name, "-o", "%i")
    assert q.returncode == 0, q.stderr
    done = [j for j, (n, _) in cluster.completed_jobs().items() if n == name]
    return q.stdout.split() + done


@pytest.mark.parametrize("prog", ["srun", "sbatch", "salloc"])
@pytest.mark.parametrize("opt,value,why", BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_refuses_the_job_at_submission_and_nothing_starts(cluster, prog, opt, value, why):
    """The plugin's one line names the option, the value and what is wrong with it. Slurm 22.05
    adds its own line after it ("Invalid --gpu-vram argument: abc") whenever an option's
    callback fails; a plugin cannot stop that."""
    name = f"gs-bad-{prog}-{opt.strip('-')}"
    marker = cluster.dir / f"{name}.ran"
    p = submit(cluster, prog, [f"{opt}={value}"], name, marker)
    assert p.returncode != 0, f"{prog} {opt}={value} was accepted"
    ours = [line for line in p.stderr.splitlines() if "gpuslice:" in line]
    assert ours == [f"{prog}: error: gpuslice: {opt}: {why}"], p.stderr
    assert f"{prog}: error: Invalid {opt} argument: {value}" in p.stderr.splitlines(), p.stderr
    time.sleep(1)
    assert not marker.exists(), f"{prog} {opt}={value}: the job ran"
    assert jobs_named(cluster, name) == [], f"{prog} {opt}={value}: a job was submitted"


@pytest.mark.parametrize("prog", ["srun", "sbatch", "salloc"])
def test_good_values_are_accepted_and_the_job_runs(cluster, prog):
    name = f"gs-good-{prog}"
    marker = cluster.dir / f"{name}.ran"
    opts = ["--gpu-vram=1Gi", "--gpu-compute=12.5", "--gpu-compute-policy=cap", "--gpu-priority=high"]
    p = submit(cluster, prog, opts, name, marker)
    assert p.returncode == 0, p.stderr + cluster.logs()
    wait_until(marker.exists, timeout=30, what=f"{prog}'s job to run")


# ---- the remote side: each step's tasks as one gpuslice tenant ----

GIB = 1 << 30
WORKLOAD = BIN / "gpusim-workload"


@pytest.fixture
def sim(cluster):
    """The job's environment, as srun passes it on: the simulated GPU (GPUSLICE_SIM and its
    library path) and a state dir for the tenants' ledgers."""
    base = cluster.dir / f"sim-{time.monotonic_ns()}"
    (base / "gpus").mkdir(parents=True)
    (base / "state").mkdir(mode=0o755)
    env = make_sim_env(base / "gpus", GPUSLICE_STATE_DIR=base / "state")
    env["SLURM_CONF"] = cluster.env["SLURM_CONF"]
    return env, base


def alloc_until_oom(cluster, env, *opts):
    p = subprocess.run(["srun", *opts, str(WORKLOAD), "alloc-until-oom", "--chunk", "64Mi"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr + cluster.logs()
    return json.loads(p.stdout.splitlines()[-1])


def test_a_step_with_gpu_vram_is_held_to_exactly_that_on_the_simulated_gpu(cluster, sim):
    env, _ = sim
    got = alloc_until_oom(cluster, env, "--gpu-vram=1Gi")
    assert got["allocated_bytes"] == GIB and got["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY", got
    # Without the option the step is no tenant and has the whole simulated GPU.
    assert alloc_until_oom(cluster, env)["allocated_bytes"] > 64 * GIB


# As test_quota_paths.py: each kind of allocation, through each way a program finds the driver.
ALLOC_KINDS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]
DRIVER_PATHS = ["--path direct", "--path dlsym", "--path procaddr", "--path procaddr --procaddr-version 12000",
                "--path procaddr-v1", "--path procaddr-v1 --procaddr-version 12000"]


def test_a_step_with_gpu_vram_is_held_on_every_allocation_path_and_sees_it_as_its_memory(cluster, sim):
    """One step of --gpu-vram=1Gi: every kind of allocation through every driver path stops at
    exactly 1 GiB, twice (the first round's frees give the charge back), and cuMemGetInfo says
    the GPU has 1 GiB."""
    env, _ = sim
    runs = [f"{WORKLOAD} {path} alloc-until-oom --chunk 64Mi --alloc {kind} --rounds 2"
            for path in DRIVER_PATHS for kind in ALLOC_KINDS]
    p = subprocess.run(["srun", "--gpu-vram=1Gi", "sh", "-c", "; ".join(runs + [f"{WORKLOAD} info"])], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr + cluster.logs()
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == len(runs) + 1, p.stdout
    for run_line, got in zip(runs, lines):
        assert got["rounds"] == [GIB, GIB] and got["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY", (run_line, got)
    dev = lines[-1]["devices"][0]
    assert dev["total_bytes"] == dev["ctx_total_bytes"] == dev["free_bytes"] == GIB, dev


def test_an_sbatch_job_with_gpu_vram_runs_its_batch_step_as_a_tenant(cluster, sim):
    env, base = sim
    out = base / "batch.out"
    p = subprocess.run(["sbatch", "--parsable", "--gpu-vram=512Mi", "-o", str(out), "--wrap",
                        f"{WORKLOAD} alloc-until-oom --chunk 64Mi; echo tenant=$GPUSLICE_TENANT"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    jobid = p.stdout.strip().split(";")[0]
    wait_until(lambda: cluster.completed_jobs().get(jobid), timeout=30, what=f"job {jobid} to end")
    lines = out.read_text().splitlines()
    assert json.loads(lines[-2])["allocated_bytes"] == 512 << 20, lines
    assert lines[-1] == f"tenant=slurm-{jobid}.batch", lines


def read_ledger(path):
    """The fields of a ledger file (include/gpuslice/tenant-ledger.h's pinned layout) this test
    checks: name, labels, and the compute limit, policy and priority."""
    b = path.read_bytes()
    name = b[16:80].split(b"\0")[0].decode()
    labels = dict(line.split("=", 1) for line in b[80:1104].split(b"\0")[0].decode().splitlines())
    ppm, policy, priority = struct.unpack_from("<III", b, 1136)
    return name, labels, ppm, policy, priority


def test_a_step_runs_as_one_tenant_named_after_job_and_step_and_ends_with_it(cluster, sim):
    env, base = sim
    copy = base / "ledger-copy"
    script = (f"echo $SLURM_JOB_ID $GPUSLICE_TENANT; "
              f"cp $GPUSLICE_STATE_DIR/tenants/$GPUSLICE_TENANT {copy}")
    p = subprocess.run(["srun", "--gpu-compute=25", "--gpu-compute-policy=cap", "--gpu-priority=high",
                        "sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr + cluster.logs()
    jobid, tenant = p.stdout.split()
    assert tenant == f"slurm-{jobid}.0"
    name, labels, ppm, policy, priority = read_ledger(copy)
    assert name == tenant
    assert labels["job"] == jobid and labels["step"] == "0", labels
    assert labels["user"] == "root" and labels["partition"] == "debug", labels
    assert (ppm, policy, priority) == (250000, 1, 2)  # 25%, GS_COMPUTE_CAP, GS_PRIO_HIGH
    # slurmstepd ends the tenant as the step ends, which may be just after srun returns.
    wait_until(lambda: not (base / "state" / "tenants" / tenant).exists(), timeout=10,
               what="the tenant's ledger to go with its step")


@pytest.mark.parametrize("comment,extra", [
    ("team=vision,project=x1 job=999", {"team": "vision", "project": "x1"}),
    ("rerun of the vision job", {}),
])
def test_a_job_comment_of_key_value_pairs_labels_its_tenant(cluster, sim, comment, extra):
    """Only a comment made of KEY=VALUE words becomes labels, and never over the plugin's own."""
    env, base = sim
    copy = base / "ledger-comment"
    script = f"echo $SLURM_JOB_ID; cp $GPUSLICE_STATE_DIR/tenants/$GPUSLICE_TENANT {copy}"
    p = subprocess.run(["srun", "--gpu-vram=1Gi", f"--comment={comment}", "sh", "-c", script], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr + cluster.logs()
    jobid = p.stdout.split()[0]
    _, labels, _, _, _ = read_ledger(copy)
    assert labels["job"] == jobid, labels
    assert {k: v for k, v in labels.items() if k not in ("job", "step", "user", "account", "partition")} == extra


def test_a_step_of_another_user_is_a_tenant_that_user_owns_held_to_its_limit(cluster):
    from daemon_env import as_user, ensure_user, user_dir

    pw = ensure_user("gs-slurm-user")
    base = user_dir(cluster.dir / "user", pw, 0o755)
    state = user_dir(base / "state", pw)
    env = make_sim_env(user_dir(base / "gpus", pw), GPUSLICE_STATE_DIR=state,
                       SLURM_CONF=cluster.env["SLURM_CONF"])
    script = (f"ls -ln $GPUSLICE_STATE_DIR/tenants/$GPUSLICE_TENANT; "
              f"{WORKLOAD} alloc-until-oom --chunk 64Mi")
    p = subprocess.run(as_user(pw) + ["srun", "--gpu-vram=256Mi", "sh", "-c", script], env=env, cwd=base,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr + cluster.logs()
    listing, *_, result = p.stdout.splitlines()
    assert listing.split()[2:4] == [str(pw.pw_uid), str(pw.pw_gid)], listing
    assert json.loads(result)["allocated_bytes"] == 256 << 20, result
    wait_until(lambda: not any((state / "tenants").iterdir()), timeout=10,
               what="the user's tenant to go with its step")


# ---- the node daemon: a step's tenant registers with it, as `gpuslice run`'s does ----

GPUSLICE = BIN / "gpuslice"
MIB = 1 << 20


@pytest.fixture
def node_daemon(cluster):
    """A gpuslice daemon on a simulated GPU of its own; its env (socket, state dir, simulated
    GPU, SLURM_CONF) is the job's, as srun and sbatch pass it on."""
    from daemon_env import Daemon

    root = cluster.dir / f"daemon-{time.monotonic_ns()}"
    root.mkdir(mode=0o755)
    d = Daemon(root, interval=0.2).start()
    d.env["SLURM_CONF"] = cluster.env["SLURM_CONF"]
    yield d
    d.stop()


def gpuslice(daemon, *args):
    return subprocess.run([str(GPUSLICE), *[str(a) for a in args]], env=daemon.env, capture_output=True,
                          text=True, timeout=30)


def sbatch(daemon, *args, env=None):
    p = subprocess.run(["sbatch", "--parsable", *[str(a) for a in args]], env=env or daemon.env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().split(";")[0]


def ended_tenant(daemon, jobid):
    """(ended_at, exit_status, interval rows) of the job's tenant in the daemon's SQLite ledger,
    found by its job label; None until the daemon has ended it."""
    rows = daemon.sql("SELECT t.ended_at, t.exit_status, (SELECT count(*) FROM intervals i WHERE "
                      "i.tenant_id = t.id) FROM tenants t JOIN tenant_labels l ON l.tenant_id = t.id "
                      "WHERE l.key = 'job' AND l.value = ?", jobid)
    return rows[0] if rows and rows[0][0] is not None else None


def test_a_step_registers_with_the_node_daemon_which_holds_its_limits_and_records_its_usage(cluster, node_daemon):
    d = node_daemon
    go, out = d.root / "go", d.root / "job.out"
    script = (f"{WORKLOAD} hold --bytes 128Mi & "
              f"while [ ! -e {go} ]; do sleep 0.05; done; "
              f"{WORKLOAD} alloc-until-oom --chunk 64Mi; kill $!; wait")
    jobid = sbatch(d, "-A", "research", "--gpu-vram=1Gi", "-o", out, "--wrap", script)
    tenant = f"slurm-{jobid}.batch"
    t = wait_until(lambda: d.tenants().get(tenant), timeout=30, what=f"{tenant} in the daemon")
    assert {k: t["labels"].get(k) for k in ("job", "step", "account")} == \
        {"job": jobid, "step": "batch", "account": "research"}, t["labels"]
    ps = gpuslice(d, "ps")
    assert ps.returncode == 0 and tenant in ps.stdout and f"job={jobid}" in ps.stdout, ps.stdout + ps.stderr
    assert (d.state / "limits" / tenant).is_file()
    s = gpuslice(d, "set", tenant, "--vram", "512Mi")
    assert s.returncode == 0, s.stderr
    go.touch()
    wait_until(lambda: cluster.completed_jobs().get(jobid), timeout=30, what=f"job {jobid} to end")
    # Held to the daemon's new limit, with the 128 MiB the step already holds.
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    got = next((x for x in lines if x.get("mode") == "alloc-until-oom"), lines)
    assert got["allocated_bytes"] == 384 * MIB and got["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY", got
    ended_at, exit_status, intervals = wait_until(lambda: ended_tenant(d, jobid), timeout=5,
                                                  what="the tenant's end in the daemon's ledger")
    assert tenant not in d.tenants() or d.tenants()[tenant]["state"] != "running"
    assert exit_status == 0 and intervals > 0, (exit_status, intervals)
    assert not (d.state / "tenants" / tenant).exists()


# ---- ends: scancel and the time limit ----

def held_until_signalled(mark):
    """A batch script that holds GPU memory until Slurm signals it, and writes the time it was
    signalled (SIGTERM, which Slurm sends first on scancel and on a time limit) to mark."""
    return (f"trap 'date +%s.%N > {mark}; kill $p; wait $p; exit 143' TERM; "
            f"{WORKLOAD} hold --bytes 128Mi & p=$!; wait $p")


def check_released(cluster, d, jobid, mark, state):
    """The job's tenant ended in the daemon within 1 s of Slurm's SIGTERM, with its exit status
    and usage in the daemon's ledger, and sacct -c has the job in state."""
    ended_at, exit_status, intervals = wait_until(lambda: ended_tenant(d, jobid), timeout=100,
                                                  what=f"job {jobid}'s tenant to end")
    released = ended_at - float(mark.read_text())
    print(f"{state}: tenant released {released:.3f} s after Slurm's SIGTERM")
    assert 0 <= released < 1.0, f"{state}: released {released:.3f} s after the signal"
    assert exit_status == 143 and intervals > 0, (exit_status, intervals)
    assert f"slurm-{jobid}.batch" not in d.tenants()
    got = wait_until(lambda: cluster.completed_jobs().get(jobid), timeout=10, what=f"job {jobid} in sacct")
    assert got[1].startswith(state), got


def test_a_cancelled_job_releases_its_tenant_within_a_second_and_its_usage_is_recorded(cluster, node_daemon):
    d = node_daemon
    mark = d.root / "cancel.signalled"
    jobid = sbatch(d, "--gpu-vram=1Gi", "-o", "/dev/null", "--wrap", held_until_signalled(mark))
    wait_until(lambda: d.tenants().get(f"slurm-{jobid}.batch"), timeout=30, what="the job's tenant")
    time.sleep(1)  # some usage to record
    p = cluster.run("scancel", jobid)
    assert p.returncode == 0, p.stderr
    check_released(cluster, d, jobid, mark, "CANCELLED")


def test_a_job_killed_by_its_time_limit_releases_its_tenant_within_a_second(cluster, node_daemon):
    """--time=1 (one minute) is the smallest limit Slurm 22.05 takes (it rounds seconds up to
    minutes), and slurmctld checks limits every 30 s: the job ends 60 to 90 s after it starts,
    the longest test of the file."""
    d = node_daemon
    mark = d.root / "timeout.signalled"
    jobid = sbatch(d, "--time=1", "--gpu-vram=1Gi", "-o", "/dev/null", "--wrap", held_until_signalled(mark))
    wait_until(lambda: d.tenants().get(f"slurm-{jobid}.batch"), timeout=30, what="the job's tenant")
    check_released(cluster, d, jobid, mark, "TIMEOUT")


# ---- shards: --gres=shard:N is N / (shards per GPU) of the GPU ----

def test_four_jobs_of_one_shard_each_get_a_quarter_of_the_gpu_and_a_fifth_waits(cluster, sim):
    """The cluster's one GPU has 4 shards (plugstack.conf: shards_per_gpu=4). Each job holds
    its shard until the test lets it go, so Slurm runs four and queues the fifth."""
    env, base = sim
    go = base / "go"
    info = subprocess.run([str(WORKLOAD), "info"], env=env, capture_output=True, text=True, timeout=30)
    total = json.loads(info.stdout)["devices"][0]["total_bytes"]
    script = (f"{WORKLOAD} alloc-until-oom --chunk 64Mi; "
              f"cp $GPUSLICE_STATE_DIR/tenants/$GPUSLICE_TENANT {base}/ledger-$SLURM_JOB_ID; "
              f"while [ ! -e {go} ]; do sleep 0.1; done")
    outs = [base / f"shard-{i}.out" for i in range(5)]
    jobs = [sbatch(None, "--gres=shard:1", "-o", out, "--wrap", script, env=env) for out in outs]

    def results():
        return [json.loads(o.read_text().splitlines()[-1]) if o.exists() and o.read_text().strip() else None
                for o in outs]

    wait_until(lambda: sum(r is not None for r in results()) == 4, timeout=60, what="four jobs to run")
    time.sleep(1)
    q = cluster.run("squeue", "-h", "-o", "%i %T %r")
    states = dict((line.split()[0], line.split()[1:]) for line in q.stdout.splitlines())
    waiting = [j for j in jobs if states.get(j, [""])[0] == "PENDING"]
    assert len(waiting) == 1 and states[waiting[0]][1] == "Resources", q.stdout
    assert results()[jobs.index(waiting[0])] is None
    go.touch()
    wait_until(lambda: all(r is not None for r in results()), timeout=60, what="the fifth job to run")
    for jobid, r in zip(jobs, results()):
        # A quarter of the memory, to the 64 MiB chunk; and a quarter of the time.
        assert total // 4 - 64 * MIB < r["allocated_bytes"] <= total // 4, (jobid, r, total)
        name, labels, ppm, policy, priority = read_ledger(base / f"ledger-{jobid}")
        assert ppm == 250000 and labels["shards"] == "1", (jobid, ppm, labels)


# ---- gpuslice slurm gres ----

def slurm_gres(env, *args):
    return subprocess.run([str(GPUSLICE), "slurm", "gres", *[str(a) for a in args]], env=env, capture_output=True,
                          text=True, timeout=30)


def test_gpuslice_slurm_gres_prints_what_cluster_sh_writes(cluster, sim):
    """The cluster's one GPU of 4 shards: what the verb prints for one simulated GPU is what
    cluster.sh put in gres.conf, slurm.conf and plugstack.conf, and the cluster runs on it."""
    env, _ = sim
    node = socket.gethostname().split(".")[0]
    p = slurm_gres(env, "--shards", "4", "--dev-dir", cluster.dir / "dev", "--plugin", PLUGIN)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = [line for line in p.stdout.splitlines() if not line.startswith("#")]
    gres = [line for line in (cluster.dir / "gres.conf").read_text().splitlines()
            if line.startswith("NodeName=")]
    assert [line for line in lines if " Name=" in line] == gres, (lines, gres)
    conf = (cluster.dir / "slurm.conf").read_text().splitlines()
    assert "GresTypes=gpu,shard" in lines and "GresTypes=gpu,shard" in conf
    node_line = next(line for line in conf if line.startswith(f"NodeName={node} "))
    assert f"NodeName={node} Gres=gpu:1,shard:4" in lines and " Gres=gpu:1,shard:4 " in node_line
    plugstack = (cluster.dir / "plugstack.conf").read_text().splitlines()
    assert lines[-1] in plugstack, (lines[-1], plugstack)


@pytest.mark.parametrize("args,why", [
    (["--shards", "-1"], "--shards '-1': want a whole number of shards per GPU, 0..1000"),
    (["--shards", "4x"], "--shards '4x': want a whole number of shards per GPU, 0..1000"),
    (["--node", "a b"], "--node: 'a b' is not a node name"),
    (["--dev-dir", "dev"], "--dev-dir: 'dev' is not an absolute path without spaces"),
])
def test_gpuslice_slurm_gres_refuses_a_bad_value_with_one_line_and_exit_2(tmp_path, args, why):
    p = slurm_gres(make_sim_env(tmp_path), *args)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr == f"gpuslice: slurm: {why}\n", p.stderr


# ---- compute: --gpu-compute shares of one GPU between concurrent jobs ----

def test_two_busy_jobs_with_gpu_compute_70_and_30_get_70_and_30_percent_of_the_gpu(cluster, sim):
    """As test_compute_share.py measures shares (compute_util.py): both jobs' workloads start at
    one CLOCK_MONOTONIC instant, a few seconds after submission, and report their own kernels'
    device time inside one common 10 s window after a 1 s warm-up; exact on the simulated GPU."""
    env, base = sim
    window, warmup = 10.0, 1.0
    start = time.monotonic_ns() + int(5e9)
    win_start = start + int(warmup * 1e9)
    win_end = win_start + int(window * 1e9)
    busy = (f"{WORKLOAD} busy --kernel-us 1000 --seconds {warmup + window:.3f} --start-at-ns {start} "
            f"--window-start-ns {win_start} --window-end-ns {win_end}")
    targets = [70, 30]
    outs = [base / f"compute-{t}.out" for t in targets]
    jobs = [sbatch(None, f"--gpu-compute={t}", "-o", out, "--wrap", busy, env=env) for t, out in zip(targets, outs)]
    for jobid in jobs:
        wait_until(lambda: cluster.completed_jobs().get(jobid), timeout=60, what=f"job {jobid} to end")
    shares = []
    for out in outs:
        line = next(json.loads(x) for x in out.read_text().splitlines() if x.startswith('{"mode":"busy"'))
        assert line["start_ns"] <= win_start, "a job started after the window opened"
        shares.append(100.0 * line["window_kernel_seconds"] / window)
    print(f"\n[slurm compute] 70->{shares[0]:.2f} 30->{shares[1]:.2f}")
    for target, got in zip(targets, shares):
        assert abs(got - target) <= 3.0, (targets, shares)


# ---- accounting: sacct and the daemon's usage ledger ----

def usage_rows(daemon, by):
    p = gpuslice(daemon, "usage", "--by", by, "--json")
    assert p.returncode == 0, p.stderr
    return {r["key"]: r for r in json.loads(p.stdout)["rows"]}


def test_sacct_and_gpuslice_usage_agree_on_the_jobs_and_their_gpu_seconds(cluster, node_daemon):
    """Three busy jobs of two accounts, at duties that add up to less than the GPU: sacct -c and
    `gpuslice usage --by label:account` / `label:job` name the same jobs and accounts, and each
    job's GPU-seconds in the daemon's ledger are its workload's kernel time within 5%."""
    d = node_daemon
    specs = [("alpha", 0.3), ("alpha", 0.2), ("beta", 0.3)]
    outs, jobs = [], []
    for i, (account, duty) in enumerate(specs):
        out = d.root / f"acct-{i}.out"
        outs.append(out)
        jobs.append(sbatch(d, "-A", account, "--gpu-vram=4Gi", "-o", out, "--wrap",
                           f"{WORKLOAD} busy --kernel-us 2000 --seconds 4 --duty {duty}"))
    for jobid in jobs:
        wait_until(lambda: ended_tenant(d, jobid), timeout=60, what=f"job {jobid}'s tenant to end")
    p = cluster.run("sacct", "-c", "-n", "-P", "-o", "jobid,account,state")
    assert p.returncode == 0, p.stderr
    sacct = {line.split("|")[0]: line.split("|")[1] for line in p.stdout.splitlines()
             if line.split("|")[0] in jobs}
    assert sacct == {j: a for j, (a, _) in zip(jobs, specs)}, p.stdout
    by_account = usage_rows(d, "label:account")
    assert {k: r["tenants"] for k, r in by_account.items()} == {"alpha": 2, "beta": 1}, by_account
    by_job = usage_rows(d, "label:job")
    assert set(by_job) == set(sacct), (by_job.keys(), sacct)
    for jobid, out in zip(jobs, outs):
        line = next(json.loads(x) for x in out.read_text().splitlines() if x.startswith('{"mode":"busy"'))
        busy = line["requested_kernel_seconds"]
        got = by_job[jobid]["gpu_seconds"]
        print(f"job {jobid}: ledger {got:.3f} GPU-s, workload {busy:.3f} s ({100 * (got / busy - 1):+.2f}%)")
        assert abs(got - busy) <= 0.05 * busy, (jobid, got, busy)
    assert abs(by_account["alpha"]["gpu_seconds"] - by_job[jobs[0]]["gpu_seconds"]
               - by_job[jobs[1]]["gpu_seconds"]) < 1e-6
    # `usage --cost` prices each account: its used cost is its GPU-seconds at the GPU's rate.
    rate = 3.6  # $ per GPU-hour: $0.001 per GPU-second
    prices = d.root / "prices.csv"
    prices.write_text("provider,region,sku,gpu,gpus,od_hr,od_gpu_hr,spot_hr,spot_gpu_hr,commit1y_gpu_hr,"
                      f"commit3y_gpu_hr,source,as_of\ntest,here,one,H100-80GB,1,{rate},{rate},,,,,a test rate,"
                      "2026-01-01\n")
    p = gpuslice(d, "usage", "--by", "label:account", "--cost", "--prices", prices, "--json")
    assert p.returncode == 0, p.stderr
    costs = {r["key"]: r for r in json.loads(p.stdout)["rows"]}
    assert set(costs) == {"alpha", "beta"}, costs
    for account, row in costs.items():
        assert row["cost"]["used"] == pytest.approx(by_account[account]["gpu_seconds"] * rate / 3600, abs=1e-6)
        assert row["cost"]["used"] > 0, row
