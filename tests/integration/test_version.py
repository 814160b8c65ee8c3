"""One version: CMake's project(gpuslice VERSION ...) is what `gpuslice --version` prints and
what the daemon reports in GET /v1/health, both from the one generated gpuslice/version.h."""
import re

from conftest import BUILD, run
from daemon_env import GPUSLICE, daemon, shared_root  # noqa: F401


def cmake_project_version():
    """The version this build tree was configured with, as CMake recorded it."""
    cache = (BUILD / "CMakeCache.txt").read_text()
    m = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(\S+)$", cache, flags=re.M)
    assert m, "CMAKE_PROJECT_VERSION not in CMakeCache.txt"
    return m.group(1)


def test_cli_version_is_the_cmake_project_version():
    r = run([GPUSLICE, "--version"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"gpuslice {cmake_project_version()}\n"


def test_daemon_reports_the_same_version_as_the_cli(daemon):
    status, health = daemon.get("/v1/health")
    assert status == 200, health
    cli = run([GPUSLICE, "--version"]).stdout.split()[-1]
    assert health["version"] == cli == cmake_project_version()
