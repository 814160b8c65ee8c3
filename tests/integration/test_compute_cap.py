"""Compute shares under the cap policy: saturating tenants started together each get their
--compute share of the device's time over a 10 s window, to within 3 percentage points
(70/30, 50/25/25, 8 x 12.5), and a capped tenant gets no more than its share even when the
device is otherwise idle (40% alone). Device time is each tenant's own kernels inside the
window, exact on the simulated GPU (compute_util.py says how).

In every accuracy case the tenants held at the gate sleep: together they use under half a
CPU, where a gate that spun would take one per waiting process."""
import pytest

from compute_util import Tenant, assert_shares, measure_shares, pct_args
from quota_env import quota_env

TOLERANCE = 3.0   # percentage points


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.mark.parametrize("targets", [[70, 30], [50, 25, 25], [12.5] * 8], ids=["70-30", "50-25-25", "8x12.5"])
def test_capped_saturating_tenants_get_their_shares(env, targets):
    assert_shares(env, targets, "cap", TOLERANCE)


def test_capped_tenant_alone_gets_its_cap_not_the_idle_device(env):
    [got] = measure_shares(env, "cap 40 alone", [Tenant(pct_args(40, "cap"))], [40],
                           lambda s: s[0] == pytest.approx(40, abs=TOLERANCE))
    assert got == pytest.approx(40, abs=TOLERANCE)


def test_capped_tenant_beside_a_share_tenant_stays_at_its_cap(env):
    """The share tenant takes the time the capped one may not use."""
    held = lambda s: s[0] == pytest.approx(20, abs=TOLERANCE) and s[1] >= 80 - TOLERANCE
    shares = measure_shares(env, "cap 20 + share 30", [Tenant(pct_args(20, "cap")), Tenant(pct_args(30, "share"))],
                            [20, 30], held)
    assert shares[0] == pytest.approx(20, abs=TOLERANCE)
    assert shares[1] >= 80 - TOLERANCE
