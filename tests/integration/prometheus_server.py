"""Helpers for the metrics tests: the daemon's /metrics over TCP, the CLI run against a daemon
of daemon_env.py, and a real Prometheus (Debian's package) on loopback with a private config
and storage, scraping every second."""
import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from daemon_env import GPUSLICE, free_port, wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def metrics(daemon):
    """The daemon's /metrics text, or "" while its metrics listener does not answer yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics", timeout=10) as r:
            return r.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return ""


def cli(daemon, *args, timeout=60):
    """`gpuslice ARGS` with the daemon's environment (its socket in GPUSLICE_SOCKET)."""
    return subprocess.run([str(GPUSLICE), *map(str, args)], env=daemon.env, capture_output=True, text=True,
                          timeout=timeout)


def stop_process(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Prometheus:
    """A context manager: Prometheus scraping `targets` every second, stopped on exit (also when
    the test fails)."""

    def __init__(self, tmp_path, targets):
        self.port = free_port()
        self.dir = tmp_path / "prometheus"
        self.dir.mkdir()
        cfg = self.dir / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                       "scrape_configs:\n  - job_name: gpuslice\n    static_configs:\n"
                       f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        self.logfile = self.dir / "prometheus.log"
        with open(self.logfile, "w") as log:
            self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={self.dir / 'data'}",
                                          f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                                         stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)

    def __enter__(self):
        try:
            wait_for(self._ready, timeout=60, what="Prometheus to be ready")
        except BaseException:
            stop_process(self.proc)
            raise
        return self

    def __exit__(self, *exc):
        stop_process(self.proc)

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited {self.proc.returncode}: {self.logfile.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    def query(self, promql):
        """An instant PromQL query through the HTTP API; returns the result vector."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as r:
            reply = json.loads(r.read())
        assert reply["status"] == "success", reply
        return reply["data"]["result"]

    def label_values(self, label, match):
        """The values of `label` on the series `match` selects (Grafana's label_values())."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/label/{urllib.parse.quote(label)}/values?"
               + urllib.parse.urlencode({"match[]": match}))
        with urllib.request.urlopen(url, timeout=10) as r:
            reply = json.loads(r.read())
        assert reply["status"] == "success", reply
        return reply["data"]
