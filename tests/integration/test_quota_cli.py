"""`gpuslice run`'s tenant options as a user meets them: a bad value is one line and exit
status 2 before anything starts (no command, no ledger); the ledger lives exactly as long as
the run; and two runs cannot share a tenant name."""
import subprocess

import pytest

from quota_env import GPUSLICE, gpuslice_run, ledger_files, quota_env, state_dir


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.mark.parametrize("options,bad", [
    (["--vram", "12X"], "12X"),
    (["--vram", "-1G"], "-1G"),
    (["--vram", "0"], "'0'"),
    (["--vram", "200%"], "200%"),
    (["--vram", "0%"], "0%"),
    (["--vram", "abc"], "abc"),
    (["--vram", ""], "''"),
    (["--context-reserve", "1Q"], "1Q"),
    (["--gpu", "99"], "99"),
    (["--gpu", "-1"], "-1"),
    (["--gpu", "x"], "'x'"),
    (["--name", "a/b"], "a/b"),
    (["--name", ""], "''"),
    (["--name", "x" * 64], "x" * 64),
    (["--label", "novalue"], "novalue"),
    (["--label", "=v"], "=v"),
])
def test_bad_tenant_option_exits_2_with_one_line_before_anything_starts(options, bad, env, tmp_path):
    marker = tmp_path / "started"
    # Alongside a good --vram, so that only the bad value can be the reason.
    good = [] if options[0] == "--vram" else ["--vram", "1Gi"]
    r = gpuslice_run(good + options, ["touch", marker], env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("gpuslice: run: ") and bad in lines[0], lines[0]
    assert options[0] in lines[0]
    assert not marker.exists()
    assert ledger_files(env) == []


@pytest.mark.parametrize("argv", [["--vram", "1Gi"], ["--vram", "1Gi", "--"], ["--name", "x"]])
def test_missing_command_exits_2_with_one_line_and_no_ledger(argv, env):
    r = subprocess.run([str(GPUSLICE), "run"] + argv, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing command" in lines[0], r.stderr
    assert ledger_files(env) == []


def test_ledger_exists_while_the_command_runs_and_is_named_after_the_tenant(env):
    r = gpuslice_run(["--vram", "1Gi", "--name", "alive"], ["sh", "-c", 'ls "$GPUSLICE_STATE_DIR/tenants"'], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["alive"]
    assert ledger_files(env) == []


def test_tenant_environment_names_the_tenant_and_state_dir(env):
    r = gpuslice_run(["--name", "envcheck"], ["sh", "-c", 'echo "$GPUSLICE_TENANT $GPUSLICE_STATE_DIR"'], env)
    assert r.stdout.split() == ["envcheck", str(state_dir(env))]


@pytest.mark.parametrize("script,status", [("exit 0", 0), ("exit 3", 3), ("kill -9 $$", 137)])
def test_ledger_is_removed_when_run_ends(script, status, env):
    r = gpuslice_run(["--vram", "1Gi", "--name", "ends"], ["sh", "-c", script], env)
    assert r.returncode == status
    assert ledger_files(env) == []
    assert (state_dir(env) / "tenants").exists()  # it was made, and emptied


def test_ledger_is_removed_when_run_is_terminated(env):
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", "term", "--", "sh", "-c", "echo up; exec sleep 30"],
                         env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        assert ledger_files(env) == ["term"]
        p.terminate()
        assert p.wait(timeout=30) == 128 + 15
    finally:
        p.kill()
        p.wait()
    assert ledger_files(env) == []


def test_second_run_with_the_same_name_is_refused_while_the_first_runs(env, tmp_path):
    marker = tmp_path / "second-started"
    first = subprocess.Popen([str(GPUSLICE), "run", "--name", "same", "--", "sh", "-c", "echo up; read x"], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "up"
        r = gpuslice_run(["--name", "same"], ["touch", marker], env)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "already running" in lines[0] and "same" in lines[0], r.stderr
        assert not marker.exists()
        # The refused run did not take the running tenant's ledger away.
        assert ledger_files(env) == ["same"]
    finally:
        first.communicate("\n", timeout=30)
    assert first.returncode == 0
    # Once the first has ended the name is free again.
    assert gpuslice_run(["--name", "same"], ["true"], env).returncode == 0
