"""Running the Go toolchain on one of the repository's Go modules, as the tests of each module
(test_k8s_agent_go.py, test_k8s_scheduler_go.py) do: gofmt, go vet and go test, with the
machine's own toolchain and the module's go.sum as it is."""
import os
import subprocess


def go(mod, *args, timeout=900, cgo=False):
    """cgo: the module calls C (the scheduler's placement core), so cgo must be on."""
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    if cgo:
        env["CGO_ENABLED"] = "1"
    return subprocess.run(["go"] + list(args), cwd=mod, env=env, capture_output=True, text=True, timeout=timeout)


def assert_gofmt_clean(mod):
    p = subprocess.run(["gofmt", "-l", "."], cwd=mod, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "", p.stdout + p.stderr


def assert_vet_clean(mod, **kw):
    p = go(mod, "vet", "./...", **kw)
    assert p.returncode == 0, p.stderr


def assert_tests_pass(mod, **kw):
    p = go(mod, "test", "-count=1", "./...", **kw)
    assert p.returncode == 0, p.stdout + p.stderr
