"""`gpuslice run`'s compute options as a user meets them: --compute, --compute-policy,
--priority and --slice-ms. A bad value is one line and exit status 2 before anything starts
(no command, no ledger); a good one lands in the tenant's ledger exactly (shares such as
12.5% are kept in millionths), with share policy and normal priority by default."""
import subprocess

import pytest

from compute_util import POLICY, PRIORITY, parse_ledger
from quota_env import GPUSLICE, gpuslice_run, ledger_files, quota_env


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def refused(options, env, marker):
    """Runs `touch marker` under OPTIONS; requires exit 2, nothing started and no ledger left;
    returns the one line on stderr."""
    r = gpuslice_run(options, ["touch", marker], env)
    lines = r.stderr.strip().splitlines()
    assert (r.returncode, len(lines)) == (2, 1), (r.returncode, r.stderr)
    assert not marker.exists() and ledger_files(env) == []
    assert lines[0].startswith("gpuslice: run: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("options,bad", [
    (["--compute", "0"], "'0'"),
    (["--compute", "101"], "'101'"),
    (["--compute", "100.5"], "'100.5'"),
    (["--compute", "abc"], "'abc'"),
    (["--compute", "-5"], "'-5'"),
    (["--compute", ""], "''"),
    (["--compute", "50%"], "'50%'"),
    (["--compute", "nan"], "'nan'"),
    (["--compute", "inf"], "'inf'"),
    (["--priority", "urgent"], "'urgent'"),
    (["--priority", ""], "''"),
    (["--priority", "HIGH"], "'HIGH'"),
    (["--compute-policy", "foo"], "'foo'"),
    (["--compute-policy", ""], "''"),
    (["--slice-ms", "0"], "'0'"),
    (["--slice-ms", "abc"], "'abc'"),
    (["--slice-ms", "-1"], "'-1'"),
    (["--slice-ms", "2.5"], "'2.5'"),
])
def test_bad_compute_option_exits_2_with_one_line_before_anything_starts(options, bad, env, tmp_path):
    # Alongside good compute options, so that only the bad value can be the reason.
    good = [] if options[0] == "--compute" else ["--compute", "50"]
    line = refused(good + options, env, tmp_path / "started")
    assert bad in line and options[0] in line, line


@pytest.mark.parametrize("pct", ["0.00001", "0.00005", "1e-9"])
def test_compute_below_a_millionth_exits_2_naming_the_smallest_share(pct, env, tmp_path):
    # Held in millionths, a smaller share would round to 0 (no limit) or up to a larger one.
    line = refused(["--compute", pct], env, tmp_path / "started")
    assert f"'{pct}'" in line and "0.0001" in line, line


def ledger_of_run(options, env):
    """The tenant's ledger as its own command sees it, read while `run` is alive."""
    cmd = ["sh", "-c", 'cat "$GPUSLICE_STATE_DIR/tenants/flags"']
    r = subprocess.run([str(GPUSLICE), "run", "--name", "flags"] + options + ["--"] + cmd, env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return parse_ledger(r.stdout)["compute"]


@pytest.mark.parametrize("options,expected", [
    (["--compute", "12.5"], (125000, "share", "normal", 0)),
    (["--compute", "100"], (1000000, "share", "normal", 0)),
    (["--compute", "0.5", "--compute-policy", "cap"], (5000, "cap", "normal", 0)),
    (["--compute", "40", "--compute-policy", "share", "--priority", "low"], (400000, "share", "low", 0)),
    (["--compute", "70", "--priority", "high", "--slice-ms", "7"], (700000, "share", "high", 7)),
    (["--priority", "high"], (0, "share", "high", 0)),
    (["--slice-ms", "10000"], (0, "share", "normal", 10000)),
    ([], (0, "share", "normal", 0)),
])
def test_compute_options_land_in_the_ledger(options, expected, env):
    c = ledger_of_run(options, env)
    ppm, policy, priority, slice_ms = expected
    assert c == {"limit_ppm": ppm, "policy": POLICY[policy], "priority": PRIORITY[priority], "slice_ms": slice_ms}


@pytest.mark.parametrize("opt,a,b", [("--compute", "10", "20"), ("--priority", "low", "high"),
                                      ("--compute-policy", "cap", "share"), ("--slice-ms", "5", "6")])
def test_compute_option_given_twice_exits_2_before_anything_starts(opt, a, b, env, tmp_path):
    line = refused([opt, a, opt, b], env, tmp_path / "started")
    assert opt in line, line


def test_help_names_the_compute_options(env):
    r = subprocess.run([str(GPUSLICE), "run", "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for opt in ("--compute ", "--compute-policy", "--priority", "--slice-ms"):
        assert opt in r.stdout, opt
