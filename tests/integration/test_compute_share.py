"""Compute shares under the share policy (the default): saturating tenants started together
each get their --compute share of the device's time over a 10 s window, to within 3
percentage points (70/30, 50/25/25, 8 x 12.5), and the device stays work-conserving: busy at
least 97% of the window. Spare time flows to whoever has work: a tenant alone, or beside
shares that add up to less than the device, gets more than its share. Device time is each
tenant's own kernels inside the window, exact on the simulated GPU (compute_util.py).

In every accuracy case the tenants held at the gate sleep: together they use under half a
CPU, where a gate that spun would take one per waiting process."""
import pytest

from compute_util import Tenant, assert_shares, measure_shares, pct_args
from quota_env import quota_env

TOLERANCE = 3.0   # percentage points
BUSY_MIN = 97.0   # % of the window the device is busy while any tenant has work


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.mark.parametrize("targets", [[70, 30], [50, 25, 25], [12.5] * 8], ids=["70-30", "50-25-25", "8x12.5"])
def test_share_tenants_get_their_shares_and_keep_the_device_busy(env, targets):
    assert_shares(env, targets, "share", TOLERANCE, busy_min=BUSY_MIN)


def test_share_tenant_alone_gets_the_whole_device(env):
    [got] = measure_shares(env, "share 30 alone", [Tenant(pct_args(30, "share"))], [30],
                           lambda s: s[0] >= BUSY_MIN)
    assert got >= BUSY_MIN


def test_spare_time_flows_to_tenants_with_work(env):
    """Shares of 40 and 20 leave 40% spare: both keep at least their share, and between them
    the device stays busy."""
    held = lambda s: s[0] >= 40 - TOLERANCE and s[1] >= 20 - TOLERANCE and sum(s) >= BUSY_MIN
    shares = measure_shares(env, "share 40/20", [Tenant(pct_args(40, "share")), Tenant(pct_args(20, "share"))],
                            [40, 20], held)
    assert shares[0] >= 40 - TOLERANCE and shares[1] >= 20 - TOLERANCE
    assert sum(shares) >= BUSY_MIN


def test_share_is_guaranteed_against_an_unlimited_tenant(env):
    """A tenant with no --compute competes for what the limited tenants leave."""
    shares = measure_shares(env, "share 60 + unlimited", [Tenant(pct_args(60, "share")), Tenant([])], [60, 40],
                            lambda s: s[0] >= 60 - TOLERANCE and sum(s) >= BUSY_MIN)
    assert shares[0] >= 60 - TOLERANCE
    assert sum(shares) >= BUSY_MIN
