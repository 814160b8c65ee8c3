"""The C sources are formatted as the repository's .clang-format says: clang-format finds
nothing to change in any .c or .h file of the tree (abi/ holds NVIDIA's declarations as
NVIDIA writes them: abi/.clang-format turns formatting off there). To fix a failure, run
`clang-format -i FILE...` (scripts/format.sh does the whole tree)."""
import pathlib
import shutil
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
DIRS = ("lib", "include", "plan", "cli", "daemon", "preload", "sim", "tests", "bench", "fuzz",
        "integrations")
CLANG_FORMAT = shutil.which("clang-format")


def c_sources(root):
    for d in DIRS:
        top = root / d
        if top.is_dir():
            yield from sorted(p for p in top.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def unformatted(files):
    """The files clang-format would change, each with its first complaint."""
    bad = []
    for f in files:
        r = subprocess.run([CLANG_FORMAT, "--dry-run", "--Werror", str(f)], capture_output=True, text=True)
        if r.returncode != 0:
            first = next((l for l in r.stderr.splitlines() if "error:" in l), r.stderr.strip())
            bad.append(first)
    return bad


def test_every_c_source_is_formatted():
    assert CLANG_FORMAT, "clang-format not found: scripts/deps.sh installs it"
    files = list(c_sources(REPO))
    assert len(files) > 100, "found too few sources: is DIRS right?"
    bad = unformatted(files)
    assert not bad, "run scripts/format.sh:\n" + "\n".join(bad[:20])


def test_a_misformatted_file_is_reported(tmp_path):
    assert CLANG_FORMAT, "clang-format not found: scripts/deps.sh installs it"
    shutil.copy(REPO / ".clang-format", tmp_path / ".clang-format")
    f = tmp_path / "x.c"
    f.write_text("int  f(void){return 1;}\n")
    assert len(unformatted([f])) == 1
    f.write_text(subprocess.run([CLANG_FORMAT, str(f)], capture_output=True, text=True, check=True).stdout)
    assert unformatted([f]) == []
