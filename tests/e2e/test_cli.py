"""Command-line behaviour shared by every command: usage errors in kbuild's own format, with a hint
and exit code 2, and options that may come before or after the kernel directory."""

import json
import re
import os
import pty
import shutil
import subprocess

from conftest import IMG2GRAY, KBUILD, PYTHON, ROOT, build_args, copy_kernel, run_kbuild


def assert_usage_error(result, message, hint):
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert lines[0] == f"kbuild: error: {message}", result.stderr
    assert lines[1].startswith("  hint: ") and hint in lines[1], result.stderr


def test_unknown_command_gets_a_suggestion_or_the_list():
    assert_usage_error(run_kbuild("buidl", check=False), "unknown command 'buidl'", "did you mean `kbuild build`?")
    assert_usage_error(run_kbuild("frobnicate", check=False), "unknown command 'frobnicate'", "publish")


def test_option_errors_name_the_command_to_ask_for_help():
    result = run_kbuild("hub", "token", "--user", "x", check=False)
    assert_usage_error(result, "--root is required", "kbuild hub token --help")


def test_unknown_options_are_named_with_a_suggestion_before_other_errors():
    # (CLI11 alone reports "A subcommand is required" or "--tag is required" for these.)
    assert_usage_error(run_kbuild("--bogus", check=False), "unknown option '--bogus'", "kbuild --help")
    assert_usage_error(run_kbuild("publish", "--tga", "v1", check=False), "unknown option '--tga' for `kbuild publish`",
                       "did you mean --tag?")
    assert_usage_error(run_kbuild("build", "--jbos", "2", check=False), "unknown option '--jbos' for `kbuild build`",
                       "did you mean --jobs?")
    assert_usage_error(run_kbuild(check=False), "no command given", "kbuild --help")
    assert run_kbuild("-V").stdout.strip() == run_kbuild("--version").stdout.strip() != ""
    # It names the commit it was built from, the compiler and the libraries.
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    version = run_kbuild("--version").stdout
    assert f"(commit {head[:12]}" in version and re.search(r"compiler: (GNU|Clang) ", version) and "libcurl" in version, version


def test_on_a_terminal_the_summary_gets_a_line_of_its_own(kernel_copy):
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([str(KBUILD), *map(str, build_args(kernel_copy, "--backend", "cpu"))], stdin=terminal,
                            stdout=terminal, stderr=terminal, env=dict(os.environ, TERM="xterm"))
    os.close(terminal)
    output = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    assert proc.wait(timeout=600) == 0, output
    text = output.decode()
    assert "\x1b[K" in text, text  # the live progress line was used
    at = text.index("kbuild: built")
    assert text[at - 1] == "\n", repr(text[at - 80:at + 20])


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


def complete_in_bash(words, cwd=None):
    script = (f'source <("{KBUILD}" completions bash); COMP_WORDS=({words}); '
              'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _kbuild; echo "${COMPREPLY[*]}"')
    env = dict(os.environ, PATH=f"{KBUILD.parent}:{os.environ['PATH']}")  # the script runs `kbuild variants`
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, cwd=cwd,
                          env=env).stdout.split()


def test_completions_offer_option_values_and_the_kernels_variants(tmp_path):
    assert complete_in_bash("kbuild build --backend c") == ["cpu", "cuda"]
    assert complete_in_bash("kbuild build --cuda-archs n") == ["native"]
    assert complete_in_bash("kbuild completions e") == ["elvish"]
    variants = complete_in_bash("kbuild build --variant torch211-cxx11-cp", cwd=IMG2GRAY)
    assert variants == ["torch211-cxx11-cpu-x86_64-linux"]
    # The variants built in build/ come first: a local build's name the matrix does not list.
    kernel = copy_kernel(tmp_path / "k", init_git=False)
    (kernel / "build" / "torch210-cxx11-cpu-x86_64-linux").mkdir(parents=True)
    assert complete_in_bash("kbuild test --variant torch210", cwd=kernel) == ["torch210-cxx11-cpu-x86_64-linux"]
    names = run_kbuild("variants", "--names", kernel).stdout.split()
    assert names[0] == "torch210-cxx11-cpu-x86_64-linux" and "torch211-cxx11-cpu-x86_64-linux" in names
    # So do typo hints: build's names the built variant too, not only the matrix's.
    typo = run_kbuild("build", kernel, "--variant", "torch210-cxx11-cpu-x86_64-linx", "--python", PYTHON, check=False)
    assert typo.returncode == 2 and "did you mean torch210-cxx11-cpu-x86_64-linux?" in typo.stderr, typo.stderr
    fish = run_kbuild("completions", "fish").stdout
    assert "-l backend -xa 'cpu cuda'" in fish and "kbuild variants --names" in fish
    elvish = shutil.which("elvish")
    assert elvish, "elvish is installed by scripts/bootstrap"
    script = tmp_path / "kbuild.elv"
    script.write_text(run_kbuild("completions", "elvish").stdout)
    probe = (f"eval (slurp < {script}) &on-end={{|ns| put [($ns[complete~] kbuild bu)] "
             "[($ns[complete~] kbuild build --backend '')] [($ns[complete~] kbuild hub s)] "
             "[($ns[complete~] kbuild build --variant '')] | each {|list| to-json [$list] } }")
    env = dict(os.environ, PATH=f"{KBUILD.parent}:{os.environ['PATH']}")
    out = subprocess.run([elvish, "-norc", "-c", probe], capture_output=True, text=True, check=True, cwd=IMG2GRAY,
                         env=env).stdout.splitlines()
    commands, backends, hub, variant_names = (json.loads(line) for line in out)
    assert "build" in commands and "--version" in commands
    assert backends == ["cpu", "cuda"] and "serve" in hub
    assert "torch211-cxx11-cpu-x86_64-linux" in variant_names


def test_shell_completions_follow_the_command_tree():
    assert complete_in_bash("kbuild bu") == ["build"]
    assert complete_in_bash("kbuild build --jo") == ["--jobs"]
    assert complete_in_bash("kbuild hub s") == ["serve"]
    assert complete_in_bash("kbuild build somedir --python /usr/bin/python3 --manyl") == ["--manylinux"]
    assert "update-build" in complete_in_bash("kbuild up")
    fish = run_kbuild("completions", "fish").stdout
    assert "complete -c kbuild -n '__fish_seen_subcommand_from build' -l jobs" in fish
    zsh = run_kbuild("completions", "zsh").stdout
    assert "bashcompinit" in zsh and "complete -o filenames -F _kbuild kbuild" in zsh
    assert run_kbuild("completions", "tcsh", check=False).returncode == 2


def test_docs_cli_names_every_option_of_every_command():
    """docs/cli.md matches --help: each command's long options are documented."""
    docs = (ROOT / "docs" / "cli.md").read_text()
    listing = run_kbuild("--help").stdout
    commands = re.findall(r"^  ([a-z][a-z-]+)[,\s]", listing[listing.index("ubcommands"):], re.M)
    assert "build" in commands and "test" in commands, listing
    missing = []
    for command in commands:
        helps = [run_kbuild(command, "--help").stdout]
        # Command groups (hub, cache, ci, toolchains): their subcommands' options too.
        sub = re.findall(r"^  ([a-z][a-z-]+)\s", helps[0].split("ubcommands", 1)[1], re.M) if "ubcommands" in helps[0] else []
        helps += [run_kbuild(command, name, "--help").stdout for name in sub]
        for text in helps:
            for option in set(re.findall(r"(--[a-z][a-z0-9-]+)", text)) - {"--help"}:
                if option not in docs:
                    missing.append(f"{command}: {option}")
    assert not missing, "options missing from docs/cli.md: " + ", ".join(sorted(missing))


def test_docs_cli_exit_codes_and_streams_match_the_tool(tmp_path):
    """docs/cli.md's exit-code table is the tool's (the ExitCode enum, the --help footer), and what it
    says of streams holds: errors on stderr, with --json one JSON document on stdout whatever happened."""
    docs = (ROOT / "docs" / "cli.md").read_text()
    table = docs[docs.index("## Exit codes"):]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table[:table.index("\n\n", 40)], re.M)}
    enum = (ROOT / "tool" / "kbuild" / "util" / "result.hpp").read_text()
    enum = enum[enum.index("enum class ExitCode"):]
    declared = {int(code) for code in re.findall(r"= (\d+),", enum[:enum.index("};")])}
    footer = run_kbuild("--help").stdout
    in_help = {int(code) for code in re.findall(r"(\d+) [a-z]", footer[footer.index("Exit codes:"):].split("\n")[0])}
    assert documented == declared == in_help, (documented, declared, in_help)
    # Streams: a usage error is on stderr only; with --json, stdout is one JSON document naming it.
    plain = run_kbuild("build", tmp_path / "missing", check=False)
    assert plain.returncode == 2 and plain.stdout == "" and "kbuild: error:" in plain.stderr
    as_json = run_kbuild("variants", tmp_path / "missing", "--json", check=False)
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["code"] == 2
    assert "kbuild: error:" in as_json.stderr


def test_doctor_reports_the_machine(tmp_path):
    env = dict(os.environ, KBUILD_PYTHON=PYTHON, KBUILD_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path))
    out = json.loads(run_kbuild("doctor", "--json", env=env).stdout)
    found = {f["what"]: f for f in out["findings"]}
    assert set(found) == {"python", "torch", "nvcc", "host compiler", "gpu", "git", "user config", "cache"}
    assert found["python"]["status"] == "ok" and "(KBUILD_PYTHON)" in found["python"]["detail"]
    assert found["torch"]["status"] == "ok" and found["torch"]["detail"].startswith("2.11.0")
    assert out["kbuild"].startswith("kbuild ")
    (tmp_path / ".config" / "kbuild").mkdir(parents=True)
    (tmp_path / ".config" / "kbuild" / "config.toml").write_text("python = [\n")
    broken = run_kbuild("doctor", env=env, check=False)
    assert broken.returncode == 2 and "config.toml:1:" in broken.stderr


def test_every_json_error_has_a_hint(tmp_path):
    """An error without a hint of its own gets one for its kind (cli/app.cpp, with_default_hint)."""
    (tmp_path / "empty").mkdir()
    closed = "http://127.0.0.1:9"  # nothing listens on the discard port
    for args in (["lock", tmp_path / "empty"], ["download", tmp_path / "empty"], ["build", tmp_path / "none"],
                 ["versions", "org/x", "--endpoint", closed], ["check", tmp_path / "empty"]):
        result = run_kbuild(*args, "--json", check=False, timeout=60)
        assert result.returncode != 0, args
        error = json.loads(result.stdout)["error"]
        assert error["message"] and error["hint"], (args, error)
        assert f"  hint: {error['hint']}" in result.stderr
    # An error raised without a hint of its own (cache/remote.cpp) leaves with its kind's.
    result = run_kbuild("build", IMG2GRAY, "--json", "--python", PYTHON, check=False,
                        env=dict(os.environ, KBUILD_REMOTE_CACHE="http://127.0.0.1:9", KBUILD_REMOTE_CACHE_MODE="rw"))
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["hint"] == "see `kbuild build --help`"
