"""Coming from kernel-builder (issue 46): docs/cli.md's table of kernel-builder's commands and options is
what the CLI does — each alias runs kbuild's command, each other row stops with exit 2 and names the
kbuild command, with the user's directory — and `init` takes kernel-builder's path forms."""

import re
import subprocess

import pytest

from conftest import KBUILD, ROOT

# kernel-builder's subcommands and build options (huggingface/kernels, kernel-builder/src/main.rs,
# August 2026), the hidden generate-docs and the assistants' `skills` excepted.
KERNEL_BUILDER_COMMANDS = ["init", "build", "build-and-copy", "build-and-upload", "upload", "check-config",
                           "check-abi", "check-builds", "create-pyproject", "clean-pyproject", "devshell",
                           "testshell", "list-variants", "hash", "fill-card", "update-build", "completions"]
KERNEL_BUILDER_OPTIONS = ["--max-jobs", "-L", "--cores"]


def table():
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("## Coming from kernel-builder", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]*)\|$", section, re.M)
    assert len(rows) >= 18, section
    return rows


def kbuild(*args, cwd=None):
    return subprocess.run([str(KBUILD), *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_the_table_covers_every_kernel_builder_command_and_option():
    theirs = {row[0].replace("kernel-builder ", "").split()[0] for row in table()}
    assert set(KERNEL_BUILDER_COMMANDS) <= theirs, sorted(set(KERNEL_BUILDER_COMMANDS) - theirs)
    options = {word.strip().split()[0] for row in table() if row[0].startswith("-") for word in row[0].split(",")}
    assert set(KERNEL_BUILDER_OPTIONS) <= options, options


@pytest.mark.parametrize("row", table(), ids=lambda row: row[0])
def test_each_row_is_what_the_cli_does(row, tmp_path):
    theirs, ours, note = row
    ours_words = ours.replace("kbuild ", "", 1).split()
    if theirs.startswith("-"):  # an option of kbuild build
        option = theirs.split(",")[0].split()[0]
        result = kbuild("build", str(tmp_path / "missing"), option, *(["2"] if " N" in theirs else []))
        if "alias" in note:
            # Accepted: the error is about the missing directory, not the option.
            assert result.returncode == 2 and "missing" in result.stderr and option not in result.stderr, result.stderr
        else:
            assert result.returncode == 2, result.stderr
            assert f"`{option}` is kernel-builder's option" in result.stderr and ours in result.stderr, result.stderr
        return
    command = theirs.replace("kernel-builder ", "").split()[0]
    if command == ours_words[0] or "alias" in note:
        # kbuild has the command under that name or as an alias: its help is kbuild's command's.
        helped = kbuild(command, "--help")
        assert helped.returncode == 0, helped.stderr
        assert re.search(rf"Usage: kbuild {re.escape(ours_words[0])}\b", helped.stdout), helped.stdout[:300]
        return
    result = kbuild(command, "./my-kernel", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"`{command}` is kernel-builder's command; in kbuild it is `kbuild {ours_words[0]}`" in result.stderr
    assert "hint: " + ours.replace("DIR", "./my-kernel") in result.stderr, result.stderr


def test_init_takes_kernel_builders_path_forms_and_says_which_owner_it_took(tmp_path):
    (tmp_path / "sub").mkdir()
    common = ["--backends", "cpu", "--no-ci", "--no-lock", "--no-git"]
    made = kbuild("init", "./sub/relu-kern", *common, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert 'name = "relu-kern"' in (tmp_path / "sub" / "relu-kern" / "build.toml").read_text()
    absolute = tmp_path / "abs" / "abs-kern"
    made = kbuild("init", str(absolute), *common, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (absolute / "build.toml").is_file()
    # An existing directory's name before the slash: a path, not an owner.
    made = kbuild("init", "sub/other-kern", *common, cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "sub" / "other-kern").is_dir(), made.stderr
    assert 'repo-id = "sub/' not in (tmp_path / "sub" / "other-kern" / "build.toml").read_text()
    # Otherwise OWNER/NAME, and init says so.
    made = kbuild("init", "team/x-kern", *common, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "the Hub repository is team/x-kern (OWNER/NAME); for a directory of that path, write ./team/x-kern" \
        in made.stdout
