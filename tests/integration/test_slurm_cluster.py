"""The Slurm integration against a real one-node Slurm 22.05 cluster (issue #14): the
module's fixture starts it with integrations/slurm/hack/cluster.sh up (its own munged,
slurmctld and slurmd on loopback, the SPANK plugin from this build in plugstack.conf) and
stops it with cluster.sh down. Needs root, as slurmd does."""
import os
import pathlib
import socket
import subprocess
import time

import pytest

from conftest import BUILD

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
        self.env.update(GS_SLURM_DIR=str(directory), GS_SLURM_CTLD_PORT=str(free_port()),
                        GS_SLURMD_PORT=str(free_port()), GS_SLURM_PLUGIN=str(PLUGIN))

    def up(self):
        p = subprocess.run(["bash", str(CLUSTER), "up"], env=self.env, capture_output=True,
                           text=True, timeout=180)
        assert p.returncode == 0, f"cluster.sh up failed:\n{p.stderr}"
        last = p.stdout.strip().splitlines()[-1]
        assert last.startswith("export SLURM_CONF="), p.stdout
        self.env["SLURM_CONF"] = last.split("=", 1)[1]

    def down(self):
        subprocess.run(["bash", str(CLUSTER), "down"], env=self.env, timeout=120)

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
    try:
        c.up()
        yield c
    finally:
        c.down()
    assert not c.dir.exists(), "cluster.sh down left its directory"


def wait_until(pred, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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
