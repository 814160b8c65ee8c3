"""`gpuslice run`: the interposer reaches the command and its descendants through the
environment, the exit status is the command's, and a bad GPUSLICE_SIM stops everything
before the command starts."""
import os
import pathlib
import re
import subprocess

import pytest

from conftest import BIN, BUILD, SIMLIB, run

GPUSLICE = BIN / "gpuslice"
PRELOAD = BUILD / "lib" / "libgpuslice.so"
PRELOAD_SRC = pathlib.Path(__file__).resolve().parents[2] / "preload"
HOOKS_DEF = PRELOAD_SRC / "hooks.def"
LDS = BUILD / "preload" / "libgpuslice.lds"  # generated from hooks.def


def plain_env(**extra):
    """The test's environment without any GPUSLICE_SIM the caller may have set."""
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSLICE_SIM", "LD_PRELOAD")}
    env.update(extra)
    return env


def one_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("gpuslice: "), stderr
    return lines[0]


def test_run_loads_interposer_in_child_and_grandchild():
    script = 'grep -c libgpuslice /proc/self/maps; sh -c "grep -c libgpuslice /proc/self/maps"'
    r = run([GPUSLICE, "run", "--", "sh", "-c", script], env=plain_env())
    assert r.returncode == 0, r.stderr
    counts = [int(x) for x in r.stdout.split()]
    assert len(counts) == 2 and all(c > 0 for c in counts), r.stdout


def test_run_without_interposer_shows_no_mapping():
    """The check above means something: a plain sh does not map libgpuslice."""
    r = run(["sh", "-c", "grep -c libgpuslice /proc/self/maps"], env=plain_env())
    assert r.stdout.strip() == "0"


def test_run_prepends_interposer_to_existing_ld_preload(tmp_path):
    # The preload reaches gpuslice itself too, which sanitizer builds must be told to accept.
    env = plain_env(LD_PRELOAD="libm.so.6", ASAN_OPTIONS="verify_asan_link_order=0")
    r = run([GPUSLICE, "run", "sh", "-c", "echo $LD_PRELOAD"], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{PRELOAD.resolve()}:libm.so.6"


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_run_returns_child_exit_status(code):
    r = run([GPUSLICE, "run", "--", "sh", "-c", f"exit {code}"], env=plain_env())
    assert r.returncode == code


def test_run_reports_killed_child_as_128_plus_signal():
    r = run([GPUSLICE, "run", "--", "sh", "-c", "kill -9 $$"], env=plain_env())
    assert r.returncode == 128 + 9


def test_run_missing_program_exits_127_with_one_line():
    r = run([GPUSLICE, "run", "--", "no-such-program-gpuslice"], env=plain_env())
    assert r.returncode == 127
    assert "no-such-program-gpuslice" in one_line(r.stderr)


def test_run_without_command_is_usage_error():
    r = run([GPUSLICE, "run"], env=plain_env())
    assert r.returncode == 2
    assert "missing command" in one_line(r.stderr)


def test_run_unknown_option_is_usage_error():
    r = run([GPUSLICE, "run", "--frobnicate", "true"], env=plain_env())
    assert r.returncode == 2
    assert "--frobnicate" in one_line(r.stderr)


def test_run_passes_options_after_command_to_command():
    r = run([GPUSLICE, "run", "echo", "--help", "-x"], env=plain_env())
    assert r.returncode == 0
    assert r.stdout.strip() == "--help -x"


def test_run_forwards_sigterm_to_child(tmp_path):
    marker = tmp_path / "got-term"
    script = f"trap 'touch {marker}; exit 7' TERM; echo ready; while :; do sleep 0.05; done"
    p = subprocess.Popen([str(GPUSLICE), "run", "--", "sh", "-c", script], env=plain_env(),
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.terminate()
    assert p.wait(timeout=30) == 7
    assert marker.exists()


def test_run_with_sim_puts_simulator_first_on_library_path(tmp_path):
    env = plain_env(GPUSLICE_SIM="t4", GPUSIM_STATE_DIR=str(tmp_path), LD_LIBRARY_PATH="/opt/x")
    r = run([GPUSLICE, "run", "sh", "-c", "echo $LD_LIBRARY_PATH"], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{SIMLIB.resolve()}:/opt/x"


def test_run_without_sim_leaves_library_path_alone():
    r = run([GPUSLICE, "run", "sh", "-c", "echo \"[$LD_LIBRARY_PATH]\""], env=plain_env(LD_LIBRARY_PATH="/opt/x"))
    assert r.stdout.strip() == "[/opt/x]"


@pytest.mark.parametrize("spec,token", [("bogus", "bogus"), ("t4:x", "t4:x"), ("t4,,l4", "t4,,l4")])
def test_run_rejects_bad_sim_spec_before_starting_child(tmp_path, spec, token):
    marker = tmp_path / "started"
    env = plain_env(GPUSLICE_SIM=spec, GPUSIM_STATE_DIR=str(tmp_path))
    r = run([GPUSLICE, "run", "touch", marker], env=env)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith("gpuslice: run: ") and token in line
    assert not marker.exists()


def version_script_globals():
    """Names the generated version script exports: the entries of its global: lists."""
    text = re.sub(r"/\*.*?\*/", "", LDS.read_text(), flags=re.S)
    names = []
    for block in re.findall(r"global:(.*?)(?:local:|\})", text, flags=re.S):
        names += [n.strip() for n in block.split(";") if n.strip()]
    return set(names)


def hook_list():
    """The one list of hooks, preload/hooks.def: (hook table entries, every exported name)."""
    text = HOOKS_DEF.read_text()
    hooks = re.findall(r"^GS_(?:CUDA|NVML)_HOOK\((\w+)\)$", text, flags=re.M)
    exports = hooks + re.findall(r"^GS_EXPORT\((\w+)\)$", text, flags=re.M)
    assert len(exports) == len(set(exports)) and hooks, exports
    return set(hooks), set(exports)


def hook_definitions():
    """Functions defined with GS_HOOK in preload/*.c, or by GS_GATED_HOOK (hook-launch.c's
    launch hooks, which define fn with GS_HOOK)."""
    names = set()
    for src in PRELOAD_SRC.glob("*.c"):
        text = src.read_text()
        names |= set(re.findall(r"^GS_HOOK\b[^(;]*?(\w+)\s*\(", text, flags=re.M))
        names |= set(re.findall(r"^GS_GATED_HOOK\((\w+),", text, flags=re.M))
    return names


def object_exports():
    """Defined symbols of default visibility in the interposer's own objects (GS_HOOK, and the
    trampoline's dlsym): what it would export were there no version script. CMake passes the
    objects' paths in GS_PRELOAD_OBJECTS."""
    objects = [o for o in os.environ.get("GS_PRELOAD_OBJECTS", "").split(":") if o]
    assert objects, "GS_PRELOAD_OBJECTS is not set (tests/integration/CMakeLists.txt sets it)"
    names = set()
    for obj in objects:
        r = run(["readelf", "-sW", obj])
        assert r.returncode == 0, r.stderr
        for line in r.stdout.splitlines():
            f = line.split()
            # Num: Value Size Type Bind Vis Ndx Name; "__" names are the compiler's and runtimes'.
            if len(f) == 8 and f[4] in ("GLOBAL", "WEAK") and f[5] == "DEFAULT" and f[6] != "UND" \
                    and not f[7].startswith("__"):
                names.add(f[7])
    return names


def test_interposer_exports_exactly_the_version_script_and_hook_table():
    """What must agree with the one list of hooks, preload/hooks.def: what the library
    exports, what the generated libgpuslice.lds lets it export, what is defined with GS_HOOK,
    and what the objects would export. hook-dlsym.c's table is hooks.def itself, and a listed
    hook with no definition fails the link. A hook missing from any one is a path that
    escapes; a definition the list lacks is a hook that is never exported."""
    r = run(["nm", "-D", "--defined-only", PRELOAD])
    assert r.returncode == 0, r.stderr
    exported = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines() if line.strip()}
    hooks, expected = hook_list()
    assert expected == hooks | {"dlsym"}, expected ^ (hooks | {"dlsym"})
    assert version_script_globals() == expected, version_script_globals() ^ expected
    assert hook_definitions() == expected, hook_definitions() ^ expected
    assert object_exports() == expected, object_exports() ^ expected
    assert exported == expected, exported ^ expected


def test_interposer_never_calls_exit_or_abort():
    """It lives in other people's processes: it may fail a call, never end the process.
    (Sanitizer builds link a runtime that may abort on a finding; that is the point there.)"""
    r = run(["nm", "-D", "--undefined-only", PRELOAD])
    undefined = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines() if line.strip()}
    if any(s.startswith("__ubsan") for s in undefined):
        pytest.skip("sanitizer build")
    assert not undefined & {"exit", "_exit", "abort", "_Exit", "quick_exit"}


def test_interposer_needs_only_libc():
    r = run(["readelf", "-d", PRELOAD])
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", r.stdout))
    needed -= {"libubsan.so.1"}  # sanitizer builds only
    assert needed <= {"libc.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-x86-64.so.2"}, needed
