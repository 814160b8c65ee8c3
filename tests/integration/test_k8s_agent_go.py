"""The Kubernetes agent's Go module (integrations/k8s/agent) is gofmt'd, vetted, and its
table tests pass: the parts that need no cluster (claims, capacities, tenant names, CDI
specs, the device plugin's devices); test_k8s_cluster.py drives the agent on a real cluster."""
import os
import pathlib
import shutil
import subprocess

import pytest

AGENT = pathlib.Path(__file__).resolve().parents[2] / "integrations" / "k8s" / "agent"

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")


def go(*args, timeout=900):
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    return subprocess.run(["go"] + list(args), cwd=AGENT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_gofmt_finds_nothing_to_change():
    p = subprocess.run(["gofmt", "-l", "."], cwd=AGENT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr


def test_go_vet_is_clean():
    p = go("vet", "./...")
    assert p.returncode == 0, p.stderr


def test_go_tests_pass():
    p = go("test", "-count=1", "./...")
    assert p.returncode == 0, p.stdout + p.stderr
