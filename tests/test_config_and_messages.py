"""Bad config and unusual paths: one-line errors naming the file and position, exit 2; never a silent skip."""

import json
import os

import pytest
from test_cli import BUGGY, run, write


def one_line_error(code, out, err):
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("torchlint: error: ")
    return err.strip().removeprefix("torchlint: error: ")


@pytest.mark.parametrize(("toml", "message"), [
    ("[tool.torchlint\n", "invalid TOML in sub/pyproject.toml at line 1, column 16: "
                          "Expected ']' at the end of a table declaration"),
    ("[tool.torchlint]\nselect = ['TL1'\n", "invalid TOML in sub/pyproject.toml at line 3, column 1: "
                                            "Unclosed array"),
    ("[tool.torchlint]\nx = \"abc", "invalid TOML in sub/pyproject.toml at line 2, column 9: Unterminated string"),
    ("tool = 3\n", "[tool] must be a table in sub/pyproject.toml"),
    ("[tool]\ntorchlint = 3\n", "[tool.torchlint] must be a table in sub/pyproject.toml at line 2"),
    ("[tool.torchlint]\nselect = ['TL1']\nignore = [\n  'TL777']\n",
     "unknown rule selector(s): TL777 in sub/pyproject.toml at line 4"),
    ("[tool.torchlint]\n\nselec = ['TL1']\n", "unknown key [tool.torchlint] selec in sub/pyproject.toml at line 3"),
    ("[tool.torchlint.TL120]\nmax_lr = 1\n",
     "unknown option TL120.max_lr in sub/pyproject.toml at line 1 (known: max-lr-adaptive, max-lr-sgd)"),
    ("[tool.torchlint]\ntorch-version = 'new'\n", 'torch-version must be a version or specifier such as ">=1.8" '
                                                 "in sub/pyproject.toml at line 2"),
    ("[tool.torchlint]\nmax-file-size = '5XB'\n", "invalid size '5XB' for max-file-size in sub/pyproject.toml "
                                                "at line 2: expected e.g. 5MB, 500KB, a number of bytes, or 0 "
                                                "for no limit"),
])
def test_a_bad_pyproject_on_the_search_path_is_an_error_not_skipped(project, capsys, toml, message):
    write(project / "pyproject.toml", "[tool.torchlint]\nselect = ['ALL']\n")  # a parent must not take over
    write(project / "sub" / "pyproject.toml", toml)
    write(project / "sub" / "m.py", BUGGY)
    assert one_line_error(*run(["sub/m.py", "--no-cache"], capsys)) == message


def test_a_pyproject_without_our_table_is_passed_over_but_one_that_does_not_parse_is_not(project, capsys):
    write(project / "pyproject.toml", "[tool.torchlint]\nselect = ['TL106']\n")
    write(project / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    write(project / "sub" / "m.py", BUGGY)
    code, out, _ = run(["sub/m.py", "--no-cache", "--output-format", "json"], capsys)
    assert code == 1 and {f["code"] for f in json.loads(out)} == {"TL106"}
    write(project / "sub" / "pyproject.toml", "[project]\nname = 'x\n")
    assert one_line_error(*run(["sub/m.py", "--no-cache"], capsys)) == (
        "invalid TOML in sub/pyproject.toml at line 3, column 1: Expected \"'\"")


def test_torchlint_toml_is_read_and_wins_over_pyproject_in_its_folder(project, capsys):
    write(project / "pyproject.toml", "[tool.torchlint]\nselect = ['TL106']\n")
    write(project / "torchlint.toml", "select = ['TL101']\n")
    write(project / "m.py", BUGGY)
    code, out, _ = run(["m.py", "--no-cache", "--output-format", "json"], capsys)
    assert code == 1 and {f["code"] for f in json.loads(out)} == {"TL101"}
    write(project / "torchlint.toml", "select = ['TL101']\n[TL101]\nmin_eps = 1\n")
    assert one_line_error(*run(["m.py", "--no-cache"], capsys)) == (
        "unknown option TL101.min_eps in torchlint.toml at line 2 (known: min-eps)")


def test_config_errors(project, capsys):
    write(project / "m.py", BUGGY)
    (project / "cfgdir").mkdir()
    assert one_line_error(*run(["m.py", "--config", "cfgdir"], capsys)) == (
        "--config cfgdir: is a directory (give a pyproject.toml or torchlint.toml file)")
    assert one_line_error(*run(["m.py", "--config", "none.toml"], capsys)) == "config file not found: none.toml"
    (project / "latin.toml").write_bytes(b"select = ['caf\xe9']\n")
    assert one_line_error(*run(["m.py", "--config", "latin.toml"], capsys)) == (
        "cannot read config latin.toml: not valid UTF-8 (invalid continuation byte at byte 14)")
    assert one_line_error(*run(["m.py", "--select", "TL999"], capsys)) == "unknown rule selector(s): TL999"


def test_messages_for_paths(project, capsys):
    (project / "empty").mkdir()
    code, out, err = run(["empty", "--no-cache"], capsys)
    assert (code, out, err) == (0, "No files were checked.\n",
                                "torchlint: warning: no Python files found under empty\n")
    code, out, err = run(["empty", "--no-cache", "--output-format", "json"], capsys)
    assert (code, out.strip()) == (0, "[]") and "no Python files found under empty" in err
    write(project / "notes.txt", "hello\n")
    assert one_line_error(*run(["notes.txt"], capsys)) == (
        "not a Python file: notes.txt (torchlint reads .py, .pyi and .ipynb files and scripts with a python shebang)")
    assert one_line_error(*run(["missing.py"], capsys)) == "path not found: missing.py"
    write(project / "script", "#!/usr/bin/env python3\nimport torch\nx = torch.log(torch.softmax(y, 1))\n")
    assert run(["script", "--no-cache"], capsys)[0] == 1  # what pre-commit's `types: [python]` passes


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlinks(project, capsys):
    os.symlink("loop.py", project / "loop.py")
    os.symlink("nowhere.py", project / "gone.py")
    assert one_line_error(*run(["loop.py"], capsys)) == "symlink loop: loop.py"
    assert one_line_error(*run(["gone.py"], capsys)) == "broken symlink: gone.py -> nowhere.py"
    write(project / "pkg" / "m.py", BUGGY)
    os.symlink("loop.py", project / "pkg" / "loop.py")
    code, out, _ = run(["pkg", "--no-cache", "--output-format", "json"], capsys)
    found = {(f["filename"], f["code"], f["message"]) for f in json.loads(out) if f["code"] == "TL002"}
    assert code == 1 and found == {("pkg/loop.py", "TL002", "cannot read file: symlink loop")}
    for output_format in ("text", "sarif", "github"):
        assert run(["pkg", "--no-cache", "--output-format", output_format], capsys)[0] == 1


def test_max_file_size_skips_with_a_note(project, capsys):
    write(project / "big.py", BUGGY + "# padding\n" * 100)
    write(project / "small.py", BUGGY)
    code, out, err = run([".", "--no-cache", "--max-file-size", "500B", "--output-format", "json"], capsys)
    assert code == 1 and {f["filename"] for f in json.loads(out)} == {"small.py"}
    assert err == ("torchlint: note: skipped big.py: 1.1 KB is over max-file-size (500 bytes); raise the "
                   "limit with --max-file-size or max-file-size in the config\n")
    write(project / "pyproject.toml", "[tool.torchlint]\nmax-file-size = '1KB'\n")
    code, out, err = run(["big.py", "--no-cache"], capsys)
    assert (code, out) == (0, "No files were checked.\n") and "1.1 KB is over max-file-size (1.0 KB)" in err
    assert run(["big.py", "--no-cache", "--max-file-size", "0"], capsys)[0] == 1  # 0: no limit
    assert one_line_error(*run(["big.py", "--max-file-size", "lots"], capsys)) == (
        "argument --max-file-size: invalid size 'lots': expected e.g. 5MB, 500KB, a number of bytes, "
        "or 0 for no limit")
