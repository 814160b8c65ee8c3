"""The interposer exports dlsym. Programs that call dlsym themselves must get the same answers
with it preloaded as without: RTLD_NEXT and RTLD_DEFAULT are resolved relative to the real
caller, and a program built with AddressSanitizer (which looks up its interceptors with
RTLD_NEXT at startup) still starts."""
import os

from conftest import BIN, BUILD, run

PROGRAM = BUILD / "tests" / "bin" / "gs-test-dlsym-next"
PRELOAD = BUILD / "lib" / "libgpuslice.so"


def env_with(preload):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GPUSLICE_TENANT")}
    if preload:
        env["LD_PRELOAD"] = str(PRELOAD)
        env["ASAN_OPTIONS"] = "verify_asan_link_order=0"
    return env


def test_rtld_next_from_a_library_finds_the_library_after_it():
    plain = run([PROGRAM], env=env_with(False))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "next_from_a=2 default=1 next_mmap=found"


def test_preloaded_dlsym_gives_the_same_answers():
    r = run([PROGRAM], env=env_with(True))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "next_from_a=2 default=1 next_mmap=found"


def test_program_runs_under_gpuslice_run(tmp_path):
    env = env_with(False)
    env["GPUSLICE_STATE_DIR"] = str(tmp_path)
    r = run([BIN / "gpuslice", "run", "--", PROGRAM], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "next_from_a=2 default=1 next_mmap=found"
