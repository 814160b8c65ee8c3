"""The documentation made from the option tables: docs/cli.md's generated blocks,
docs/configuration.md's, and the whole man page must be what `gpuslice __docs` makes of the
tables today (scripts/gen-docs.sh rewrites them), and every verb's --help must list exactly
the options of its table."""
import pathlib
import re
import subprocess

import pytest

from conftest import BIN

GPUSLICE = BIN / "gpuslice"
REPO = pathlib.Path(__file__).resolve().parents[2]
FIX = "run scripts/gen-docs.sh and commit the result"


def docs(*args, stdin=None):
    r = subprocess.run([str(GPUSLICE), "__docs", *args], input=stdin, capture_output=True, text=True, timeout=60)
    return r


@pytest.mark.parametrize("md", ["docs/cli.md", "docs/configuration.md"])
def test_markdown_option_tables_are_generated_from_the_tables(md):
    text = (REPO / md).read_text()
    r = docs("md", stdin=text)
    assert r.returncode == 0, r.stderr
    assert r.stdout == text, f"{md} differs from the option tables: {FIX}"


def test_man_page_is_generated_from_the_tables():
    r = docs("man")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (REPO / "docs" / "gpuslice.1").read_text(), f"docs/gpuslice.1 differs: {FIX}"


def tables():
    r = docs("list")
    assert r.returncode == 0, r.stderr
    return {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()}


def listed_verbs():
    r = subprocess.run([str(GPUSLICE), "--help"], capture_output=True, text=True, timeout=60)
    commands = r.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0] for line in commands.splitlines()}


def test_every_verb_has_a_table():
    assert set(tables()) == listed_verbs() | {"gpuslice"}


def generated_blocks(md):
    return set(re.findall(r"^<!-- BEGIN generated: (\S+) -->$", (REPO / md).read_text(), flags=re.M))


def test_every_table_is_in_cli_md():
    # A table whose options are another's (gpus has ps's) is documented by that one's block.
    t, blocks = tables(), generated_blocks("docs/cli.md")
    for name, opts in t.items():
        assert name in blocks or any(t[b] == opts for b in blocks if b in t), f"docs/cli.md has no block for {name}"


def test_the_daemon_settings_are_in_configuration_md():
    assert "daemon-settings" in generated_blocks("docs/configuration.md")


def help_options(verb):
    argv = [str(GPUSLICE)] + ([] if verb == "gpuslice" else [verb]) + ["--help"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [m.group(1) for m in re.finditer(r"^  (?:-\w, )?(--[\w-]+)", r.stdout, flags=re.M)]


@pytest.mark.parametrize("verb", sorted(tables()))
def test_help_lists_exactly_the_options_of_the_table(verb):
    assert help_options(verb) == tables()[verb]


def test_a_block_naming_no_table_is_refused():
    r = docs("md", stdin="<!-- BEGIN generated: nosuchverb -->\n<!-- END generated -->\n")
    assert r.returncode == 2 and "nosuchverb" in r.stderr and r.stderr.count("\n") == 1
