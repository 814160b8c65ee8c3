"""The CLI's daemon client (cli/cli-daemon-client.c) against a stand-in daemon: it finds the socket
from --socket or GPUSLICE_SOCKET, says "no daemon at <socket>: <why>" and exits 1 when nothing
answers, carries the daemon's JSON error text on a 4xx/5xx, and rejects a reply that is not JSON."""
import os

import pytest

from conftest import BIN, run
from fake_daemon import FakeDaemon

GPUSLICE = BIN / "gpuslice"
VERBS = [["ps"], ["gpus"], ["top", "--once"], ["usage"], ["set", "t", "--priority", "low"]]


def run_against(tmp_path, method, path, reply, verb):
    """Runs `gpuslice VERB --socket S` against a fake daemon that answers METHOD PATH with
    REPLY (status, body)."""
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, {(method, path): reply}):
        return run([GPUSLICE, verb, "--socket", sock])


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_no_daemon_is_one_line_naming_the_socket_and_exit_1(tmp_path, verb):
    sock = tmp_path / "absent.sock"
    r = run([GPUSLICE, *verb, "--socket", sock])
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == f"gpuslice: {verb[0]}: no daemon at {sock}: No such file or directory\n"


def test_socket_nobody_listens_on_says_connection_refused(tmp_path):
    import socket
    path = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))  # bound, never listening: connect() is refused
    try:
        r = run([GPUSLICE, "ps", "--socket", path])
    finally:
        s.close()
    assert r.returncode == 1
    assert r.stderr == f"gpuslice: ps: no daemon at {path}: Connection refused\n"


def test_gpuslice_socket_env_is_used_when_no_option(tmp_path):
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, {("GET", "/v1/tenants"): (200, {"tenants": []})}) as d:
        env = dict(os.environ, GPUSLICE_SOCKET=str(sock))
        r = run([GPUSLICE, "ps", "--json"], env=env)
    assert r.returncode == 0, r.stderr
    assert d.requests[0][:2] == ("GET", "/v1/tenants")


def test_option_beats_environment(tmp_path):
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, {("GET", "/v1/gpus"): (200, {"gpus": []})}):
        env = dict(os.environ, GPUSLICE_SOCKET=str(tmp_path / "elsewhere.sock"))
        r = run([GPUSLICE, "gpus", "--socket", sock], env=env)
    assert r.returncode == 0, r.stderr


def test_daemon_error_text_is_reported_and_exit_1(tmp_path):
    r = run_against(tmp_path, "GET", "/v1/tenants", (500, {"error": "ledger unavailable: disk full"}), "ps")
    assert r.returncode == 1
    assert r.stderr == "gpuslice: ps: ledger unavailable: disk full\n"


def test_error_without_json_body_names_the_status(tmp_path):
    r = run_against(tmp_path, "GET", "/v1/gpus", (503, b"busy"), "gpus")
    assert r.returncode == 1
    assert r.stderr == "gpuslice: gpus: daemon answered HTTP 503\n"


def test_reply_that_is_not_json_is_a_failure(tmp_path):
    r = run_against(tmp_path, "GET", "/v1/gpus", (200, b"<html>"), "gpus")
    assert r.returncode == 1
    assert r.stderr.startswith("gpuslice: gpus: daemon reply is not JSON: ")
    assert r.stderr.count("\n") == 1


def test_reply_without_the_expected_array_is_a_failure(tmp_path):
    r = run_against(tmp_path, "GET", "/v1/tenants", (200, {"nope": 1}), "ps")
    assert r.returncode == 1
    assert r.stderr == 'gpuslice: ps: daemon reply has no "tenants" array\n'


@pytest.mark.parametrize("verb", ["ps", "gpus", "top", "usage", "set"])
def test_every_daemon_verb_has_help(verb):
    r = run([GPUSLICE, verb, "--help"])
    assert r.returncode == 0
    assert r.stdout.startswith(f"Usage: gpuslice {verb}")
    assert "Exit status:" in r.stdout


@pytest.mark.parametrize("args", [["ps", "--bogus"], ["gpus", "extra"], ["top", "--interval", "0"],
                                  ["usage", "--by", "team"], ["set"]])
def test_usage_errors_exit_2_with_one_line(args):
    r = run([GPUSLICE, *args])
    assert r.returncode == 2
    assert r.stderr.startswith(f"gpuslice: {args[0]}: ") and r.stderr.count("\n") == 1
