"""check_includes.py: the tree keeps lib/'s headers to lib/, and the check reports an edge
that breaks the rule (a throwaway tree in tmp_path), by file, line and header."""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
CHECK = HERE / "check_includes.py"


def check(root):
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root)],
                          capture_output=True, text=True)


def tree(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_the_repository_has_no_edge_including_a_private_header():
    r = check(HERE.parents[1])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


def test_an_edge_including_a_private_header_is_reported_by_file_and_line(tmp_path):
    root = tree(tmp_path, {
        "lib/shm.h": "int gs__shm(void);\n",
        "include/gpuslice/error.h": "\n",
        "daemon/a.c": '#include <gpuslice/error.h>\n\n#include "shm.h"\n',
        "cli/b.h": '  #  include "shm.h"\n',
        "preload/c.c": '#include "quota.h"\n',
    })
    r = check(root)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "cli/b.h:1: includes lib/'s private header shm.h",
        "daemon/a.c:3: includes lib/'s private header shm.h",
    ]


def test_a_relative_path_into_lib_is_reported_too(tmp_path):
    root = tree(tmp_path, {
        "lib/place-internal.h": "\n",
        "plan/x.c": '#include "../lib/place-internal.h"\n',
    })
    r = check(root)
    assert r.returncode == 1
    assert "plan/x.c:1: includes lib/'s private header ../lib/place-internal.h" in r.stdout


def test_lib_and_tests_may_include_private_headers(tmp_path):
    root = tree(tmp_path, {
        "lib/shm.h": "\n",
        "lib/shm.c": '#include "shm.h"\n',
        "tests/unit/t.c": '#include "shm.h"\n',
    })
    assert check(root).returncode == 0


def test_a_tree_without_lib_is_a_usage_error(tmp_path):
    r = check(tmp_path)
    assert r.returncode == 2
    assert "no lib/ directory" in r.stderr
