"""The gpuslice scheduler's Go module (integrations/k8s/scheduler) is gofmt'd, vetted, and its
table tests pass: the C placement core through cgo (place/), the plugin's request and gang
parsing, per-GPU fit against DRA claims, and scores that choose the core's own node
(plugin/). With the scheduler binary built (build.sh, component `scheduler`), a profile
naming an unknown policy, or a queue with a bad field, makes it refuse to start, with what is
wrong named in one line."""
import os
import pathlib
import shutil
import subprocess

import pytest

from go_module import assert_gofmt_clean, assert_tests_pass, assert_vet_clean

ROOT = pathlib.Path(__file__).resolve().parents[2]
MOD = ROOT / "integrations" / "k8s" / "scheduler"

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")


def test_gofmt_finds_nothing_to_change():
    assert_gofmt_clean(MOD)


def test_go_vet_is_clean():
    assert_vet_clean(MOD, timeout=1700, cgo=True)


def test_go_tests_pass():
    assert_tests_pass(MOD, timeout=1700, cgo=True)


def scheduler_binary():
    if os.environ.get("GS_K8S_SCHEDULER"):
        return pathlib.Path(os.environ["GS_K8S_SCHEDULER"])
    env = dict(os.environ, GS_K8S_ONLY="scheduler")
    p = subprocess.run([str(ROOT / "integrations/k8s/hack/build.sh")], env=env,
                       capture_output=True, text=True, timeout=1700)
    assert p.returncode == 0, p.stderr
    return pathlib.Path(p.stdout.strip().splitlines()[-1]) / "gpuslice-scheduler"


def refused(tmp_path, old, new):
    """Runs the scheduler with the example's configuration, `old` replaced by `new`, and
    returns its stderr once it exits 1."""
    binary = scheduler_binary()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
""")
    example = (ROOT / "integrations/k8s/examples/gpuslice-scheduler-config.yaml").read_text()
    assert old in example
    config = tmp_path / "config.yaml"
    config.write_text(example.replace(old, new) + "clientConnection:\n  kubeconfig: %s\n" % kubeconfig)
    p = subprocess.run([str(binary), "--config", str(config), "--secure-port", "0"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    return p.stderr


def test_unknown_policy_refuses_to_start_in_one_line(tmp_path):
    stderr = refused(tmp_path, "policy: fgd\n", "policy: spread\n")
    # klog quotes the error: unknown policy \"spread\".
    lines = [ln for ln in stderr.splitlines() if "unknown policy" in ln]
    assert len(lines) == 1, stderr
    assert 'initializing plugin \\"Gpuslice\\"' in lines[0], lines[0]
    assert 'unknown policy \\"spread\\" (known: first-fit, best-fit, gpu-packing, fgd, fgd-mem, fgd-mem-tie)' in lines[0], lines[0]


def test_a_bad_queue_refuses_to_start_in_one_line(tmp_path):
    stderr = refused(tmp_path, "tieSeed: 0\n", "tieSeed: 0\n          queues: [{name: a, guaranteedMilli: 1000},"
                     " {name: b, guaranteedMilli: -5}]\n")
    lines = [ln for ln in stderr.splitlines() if "guaranteedMilli" in ln]
    assert len(lines) == 1, stderr
    assert 'initializing plugin \\"Gpuslice\\"' in lines[0], lines[0]
    assert "gpuslice: plugin args: queues[1].guaranteedMilli -5 is not >= 0" in lines[0], lines[0]
