"""The Kubernetes agent's Go module (integrations/k8s/agent) is gofmt'd, vetted, and its
table tests pass: the parts that need no cluster (claims, capacities, tenant names, CDI
specs, the device plugin's devices); test_k8s_cluster.py drives the agent on a real cluster."""
import pathlib
import shutil

import pytest

from go_module import assert_gofmt_clean, assert_tests_pass, assert_vet_clean

AGENT = pathlib.Path(__file__).resolve().parents[2] / "integrations" / "k8s" / "agent"

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")


def test_gofmt_finds_nothing_to_change():
    assert_gofmt_clean(AGENT)


def test_go_vet_is_clean():
    assert_vet_clean(AGENT)


def test_go_tests_pass():
    assert_tests_pass(AGENT)
