"""Compute gating fails closed. Each GPU's compute board has a row for each of up to 1,024
tenants; a tenant that finds every row taken never runs ungated (a 20% cap at 100%). By
default it waits for a row, for at most GPUSLICE_BOARD_FULL=wait:SECONDS (60 s unless set),
and its launch is then refused with CUDA_ERROR_NOT_PERMITTED; with GPUSLICE_BOARD_FULL=refuse
it is refused at once. Either way the interposer says so once on stderr.

The board is filled here by writing its rows as live tenants would (compute_util's reader of
the layout), not by starting a thousand processes."""
import os
import signal
import subprocess
import time

import pytest

from compute_util import (BOARD_ROWS, BOARD_SIZE, BOARD_VERSION, ROW_FREE, board_fill, board_free_row,
                          board_header, board_row, board_rows)
from quota_env import GPUSLICE, quota_env, state_dir
from wl_run import WORKLOAD

REFUSED = "CUDA_ERROR_NOT_PERMITTED"
FULL = "every row of GPU 0's board is taken"


def late_argv(name="late"):
    return [str(GPUSLICE), "run", "--name", name, "--compute", "20", "--compute-policy", "cap", "--",
            str(WORKLOAD), "busy", "--seconds", "0.3", "--kernel-us", "200"]


@pytest.fixture
def full(tmp_path):
    """(env, board path): a board made by a first tenant, then every row of it taken."""
    env = quota_env(tmp_path)
    env.pop("GPUSLICE_BOARD_FULL", None)
    first = subprocess.run(late_argv("first"), env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    boards = list((state_dir(env) / "gpus").iterdir())
    assert len(boards) == 1, boards
    board_fill(boards[0])
    return env, boards[0]


def start_late(env, **extra):
    return subprocess.Popen(late_argv(), env=dict(env, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def kill(p):
    """Ends `run` and its command with it, if still there."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)


def full_lines(err):
    return [line for line in err.splitlines() if FULL in line]


def test_the_board_holds_1024_tenants_in_its_pinned_layout(full):
    _, board = full
    raw = board.read_bytes()
    h = board_header(raw)
    assert (h["version"], h["size"], len(raw)) == (BOARD_VERSION, BOARD_SIZE, BOARD_SIZE), h
    assert board_rows(raw) == BOARD_ROWS == 1024


def test_a_tenant_finding_every_row_taken_waits_for_one_by_default(full):
    env, board = full
    p = start_late(env)
    try:
        time.sleep(1.5)
        # Ungated, its 0.3 s of work would long be done.
        assert p.poll() is None, p.communicate()
        board_free_row(board, 5)
        out, err = p.communicate(timeout=60)
    finally:
        kill(p)
    assert p.returncode == 0, err
    # The row freed was the one it got; `run` gave it back as its tenant ended.
    assert board_row(board.read_bytes(), 5) == (ROW_FREE, "late")
    lines = full_lines(err)
    assert len(lines) == 1 and "wait up to 60 s" in lines[0], err


def test_a_wait_for_a_row_is_bounded_then_the_launch_is_refused(full):
    env, _ = full
    t0 = time.monotonic()
    p = start_late(env, GPUSLICE_BOARD_FULL="wait:1")
    out, err = p.communicate(timeout=60)
    waited = time.monotonic() - t0
    assert p.returncode != 0 and REFUSED in err, (p.returncode, err)
    assert waited >= 1.0, waited
    lines = full_lines(err)
    assert len(lines) == 1 and "wait up to 1 s" in lines[0], err


def test_with_refuse_a_tenant_finding_every_row_taken_is_refused_at_once(full):
    env, _ = full
    t0 = time.monotonic()
    p = start_late(env, GPUSLICE_BOARD_FULL="refuse")
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0 and REFUSED in err, (p.returncode, err)
    assert time.monotonic() - t0 < 30
    lines = full_lines(err)
    assert len(lines) == 1 and "refused" in lines[0], err


def test_a_bad_board_full_value_waits_rather_than_runs_ungated(full):
    env, _ = full
    p = start_late(env, GPUSLICE_BOARD_FULL="sometimes")
    try:
        time.sleep(1.5)
        assert p.poll() is None, p.communicate()
    finally:
        kill(p)
        _, err = p.communicate(timeout=60)
    assert "GPUSLICE_BOARD_FULL='sometimes'" in err, err
