"""Every launch path is gated: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel
and cuGraphLaunch. A capped tenant alone is held to its cap whichever path it launches
through, and a tenant launching through graphs (or Ex, or cooperative launches) gets the same
share as one of equal weight launching plainly. A graph step is 4 kernels (sim/workload)."""
import pytest

from compute_util import Tenant, measure_shares, pct_args
from quota_env import quota_env

TOLERANCE = 3.0   # percentage points
KERNEL_US = 500


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.mark.parametrize("launch", ["graph", "coop", "ex"])
def test_capped_tenant_alone_is_held_to_its_cap_on_every_launch_path(env, launch):
    [got] = measure_shares(env, f"cap 30 alone, {launch} launches",
                           [Tenant(pct_args(30, "cap"), ["--launch", launch], kernel_us=KERNEL_US)], [30],
                           lambda s: s[0] == pytest.approx(30, abs=TOLERANCE))
    assert got == pytest.approx(30, abs=TOLERANCE)


@pytest.mark.parametrize("launch,policy", [("graph", "cap"), ("graph", "share"), ("coop", "cap"), ("ex", "share")])
def test_half_shares_hold_between_a_plain_and_another_launch_path(env, launch, policy):
    tenants = [Tenant(pct_args(50, policy), ["--launch", launch], kernel_us=KERNEL_US),
               Tenant(pct_args(50, policy), ["--launch", "plain"], kernel_us=KERNEL_US)]
    halves = lambda s: all(got == pytest.approx(50, abs=TOLERANCE) for got in s)
    shares = measure_shares(env, f"{policy} 50/50, {launch} vs plain", tenants, [50, 50], halves)
    for got in shares:
        assert got == pytest.approx(50, abs=TOLERANCE), shares
