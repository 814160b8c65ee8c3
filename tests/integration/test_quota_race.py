"""The race of issue 3: 16 processes of one tenant each ask for 100 MiB against a 1000 MiB
quota at the same time, 200 times. Reservations are compare-and-swap against the limit
before the driver is called, so at most 10 may ever hold at once; and because every winner
holds until all have answered, exactly 10 must. While they hold, the device (read from
outside the tenant) must not show more in use than the quota (no context reserve here)."""
import pytest

from quota_env import driver, quota_env
from wl_run import MIB

TRIALS = 200
PROCS = 16
LIMIT = 1000 * MIB
EACH = 100 * MIB


@pytest.fixture(scope="module")
def race(tmp_path_factory):
    env = quota_env(tmp_path_factory.mktemp("race"))
    lines = driver(["--vram", "1000Mi", "--name", "race"], ["race", TRIALS, PROCS, "100Mi"], env, timeout=600)
    assert lines[-1].get("done") is True, lines[-1]
    return lines[:-1]


def test_race_runs_every_trial(race):
    assert [t["trial"] for t in race] == list(range(TRIALS))


def test_race_every_process_either_holds_or_is_refused_out_of_memory(race):
    for t in race:
        assert t["other"] == [], t
        assert t["ready"] + t["oom"] == PROCS, t


def test_race_never_more_than_the_quota_succeed(race):
    assert max(t["ready"] for t in race) <= LIMIT // EACH


def test_race_exactly_the_quota_succeeds_in_every_trial(race):
    assert [t["ready"] for t in race] == [LIMIT // EACH] * TRIALS


def test_race_device_used_never_exceeds_the_quota(race):
    """Read by `gpusim-workload info` outside the tenant, while all winners hold."""
    assert max(t["outside_used"] for t in race) <= LIMIT
    # The winners' memory is really on the device: the reading is not a zero by accident.
    assert all(t["outside_used"] == t["ready"] * EACH for t in race)
