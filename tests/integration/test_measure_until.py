"""measure_until (compute_util.py), the retry of the timing tests: a case that holds is measured
once; a miss is measured again and reported as a warning; a case missed on every try is
returned for the caller to fail on, unless the VM's host stole over STOLEN_MAX of the CPU time
in every try, when it is skipped. Nothing here starts a process."""
import itertools

import pytest

import compute_util
from compute_util import STOLEN_MAX, TRIES, measure_until


def counter():
    n = itertools.count(1)
    return lambda: next(n)


def test_a_case_that_holds_is_measured_once():
    assert measure_until(counter(), lambda r: True) == 1


def test_a_miss_is_measured_again_and_warned_of():
    with pytest.warns(UserWarning, match=r"demo: try 1 of 3 missed; the host stole"):
        assert measure_until(counter(), lambda r: r >= 2, label="demo") == 2


def test_a_case_missed_on_every_try_on_a_quiet_machine_is_returned_to_fail(monkeypatch):
    monkeypatch.setattr(compute_util, "_stolen_cpu_seconds", lambda: 0.0)
    with pytest.warns(UserWarning):
        assert measure_until(counter(), lambda r: False) == TRIES


def test_a_case_missed_while_the_host_stole_every_try_is_skipped(monkeypatch):
    stolen = itertools.count(0, 100.0)   # 100 CPU-s more at every look: far over STOLEN_MAX
    monkeypatch.setattr(compute_util, "_stolen_cpu_seconds", lambda: next(stolen))
    with pytest.warns(UserWarning), pytest.raises(pytest.skip.Exception, match="could not be measured"):
        measure_until(counter(), lambda r: False)


def test_one_quiet_try_among_the_misses_makes_it_a_failure_not_a_skip(monkeypatch):
    looks = iter([0.0, 100.0, 100.0, 100.0, 200.0, 300.0])   # the second try is quiet
    monkeypatch.setattr(compute_util, "_stolen_cpu_seconds", lambda: next(looks))
    with pytest.warns(UserWarning):
        assert measure_until(counter(), lambda r: False) == TRIES
    assert STOLEN_MAX > 0


def test_tries_below_one_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        measure_until(counter(), lambda r: True, tries=0)
