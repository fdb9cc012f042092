"""Command-line behaviour shared by every command: usage errors in kbuild's own format, with a hint
and exit code 2, and options that may come before or after the kernel directory."""

import json

from conftest import IMG2GRAY, run_kbuild


def assert_usage_error(result, message, hint):
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert lines[0] == f"kbuild: error: {message}", result.stderr
    assert lines[1].startswith("  hint: ") and hint in lines[1], result.stderr


def test_unknown_command_gets_a_suggestion_or_the_list():
    assert_usage_error(run_kbuild("buidl", check=False), "unknown command 'buidl'", "did you mean `kbuild build`?")
    assert_usage_error(run_kbuild("frobnicate", check=False), "unknown command 'frobnicate'", "publish")


def test_option_errors_name_the_command_to_ask_for_help():
    assert_usage_error(run_kbuild("publish", IMG2GRAY, check=False), "--tag is required", "kbuild publish --help")
    result = run_kbuild("hub", "token", "--user", "x", check=False)
    assert_usage_error(result, "--root is required", "kbuild hub token --help")


def test_a_missing_kernel_directory_is_one_error(tmp_path):
    for command in ("build", "config", "variants"):
        result = run_kbuild(command, tmp_path / "absent", check=False)
        assert_usage_error(result, f"{tmp_path / 'absent'} is not a directory", "kbuild init")
        assert result.stderr.count("error") == 1, result.stderr
        result = run_kbuild(command, tmp_path, check=False)
        assert_usage_error(result, f"no build.toml in {tmp_path}", "kbuild init")


def test_repeatable_options_take_one_value_each():
    names = ["torch211-cxx11-cpu-x86_64-linux", "torch211-cxx11-cu130-x86_64-linux"]
    # The kernel directory after a repeatable option is the positional argument, not another value.
    result = run_kbuild("variants", "--variant", names[0], "--variant", names[1], IMG2GRAY, "--json", cwd="/")
    assert [v["name"] for v in json.loads(result.stdout)["variants"]] == names
