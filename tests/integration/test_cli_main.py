"""`gpuslice` itself: help, version, and one-line usage errors with exit status 2."""
import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["run", "--help"], ["demo", "--help"]])
def test_help_exits_zero_and_prints_usage(args):
    r = run([GPUSLICE, *args])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Usage: gpuslice")
    assert r.stderr == ""


def test_help_documents_exit_statuses():
    r = run([GPUSLICE, "--help"])
    assert "0 success, 1 failure, 2 usage error" in r.stdout


def test_version_prints_one_line():
    r = run([GPUSLICE, "--version"])
    assert r.returncode == 0
    assert r.stdout.startswith("gpuslice ") and len(r.stdout.splitlines()) == 1


@pytest.mark.parametrize("args", [["--version", "--bogus"], ["-V", "frobnicate"], ["--help", "--bogus"]])
def test_version_and_help_act_when_met_and_ignore_what_follows(args):
    # As getopt always had it: what follows --version or --help is not read.
    r = run([GPUSLICE, *args])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("gpuslice " if args[0] != "--help" else "Usage: gpuslice")


def test_a_bad_option_before_version_is_still_a_usage_error():
    r = run([GPUSLICE, "--bogus", "--version"])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("gpuslice: --bogus: unknown option") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("args,token", [
    (["frobnicate"], "frobnicate"),
    (["--frobnicate"], "--frobnicate"),
    ([], "missing command"),
    (["demo", "--seconds", "soon"], "soon"),
    (["demo", "--seconds"], "--seconds"),
    (["demo", "extra"], "extra"),
])
def test_usage_errors_exit_two_with_one_line(args, token):
    r = run([GPUSLICE, *args])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuslice: ") and token in lines[0], r.stderr
    assert r.stdout == ""
