"""Source is read as Python reads it (BOM, PEP 263 cookie); only bytes Python rejects are TL002; --fix keeps
the file's encoding."""

import json

import pytest
from test_cli import run

from torchlint.source import SourceError, decode_source, source_lines

LOG_SOFTMAX = "x = torch.log(torch.softmax(y, 1))\n"


def findings(project, capsys, *args):
    code, out, _ = run([".", "--no-cache", "--output-format", "json", *args], capsys)
    return code, sorted((f["filename"], f["code"], f["location"]["row"], f["location"]["column"], f["message"])
                        for f in json.loads(out))


def test_declared_encodings_and_bom_are_read_with_positions_in_characters(project, capsys):
    (project / "latin.py").write_bytes(
        f"# -*- coding: latin-1 -*-\nimport torch\ns = 'café'; {LOG_SOFTMAX}".encode("latin-1"))
    (project / "cp1252.py").write_bytes(f"# vim: set fileencoding=cp1252 :\nimport torch\ns = '€é'; {LOG_SOFTMAX}"
                                        .encode("cp1252"))
    (project / "bom.py").write_bytes(f"\ufeffimport torch\ns = 'é€'; {LOG_SOFTMAX}".encode())
    (project / "crlf.py").write_bytes(f"import torch\ns = 'ü'; {LOG_SOFTMAX}".replace("\n", "\r\n").encode())
    code, found = findings(project, capsys, "--select", "TL102")
    assert code == 1
    assert [f[:4] for f in found] == [
        ("bom.py", "TL102", 2, 15), ("cp1252.py", "TL102", 3, 15), ("crlf.py", "TL102", 2, 14),
        ("latin.py", "TL102", 3, 17),
    ]


def test_only_bytes_python_rejects_are_tl002(project, capsys):
    (project / "undeclared.py").write_bytes("import torch\ns = 'café'\n".encode("latin-1"))
    (project / "wrong.py").write_bytes("# coding: ascii\nimport torch\ns = 'café'\n".encode("latin-1"))
    (project / "unknown.py").write_bytes(b"# coding: klingon\nimport torch\n")
    (project / "bomcookie.py").write_bytes(b"\xef\xbb\xbf# coding: latin-1\nimport torch\n")
    (project / "nul.py").write_bytes(b"import torch\nx = 1\0\n")
    code, found = findings(project, capsys)
    assert code == 1
    assert found == [
        ("bomcookie.py", "TL002", 1, 1, "cannot read file: encoding problem: utf-8"),
        ("nul.py", "TL002", 2, 6, "cannot read file: source contains a null byte"),
        ("undeclared.py", "TL002", 2, 9, "cannot read file: not valid UTF-8 (invalid continuation byte)"),
        ("unknown.py", "TL002", 1, 1, "cannot read file: unknown encoding: klingon"),
        ("wrong.py", "TL002", 3, 9, "cannot read file: not valid ascii (ordinal not in range(128))"),
    ]
    for name in ("undeclared", "wrong", "unknown", "bomcookie", "nul"):  # Python agrees with each
        with pytest.raises((SyntaxError, ValueError)):
            compile((project / f"{name}.py").read_bytes(), name, "exec")


@pytest.mark.parametrize(("name", "data"), [
    ("latin.py", f"# -*- coding: latin-1 -*-\nimport torch\ns = 'café'; {LOG_SOFTMAX}".encode("latin-1")),
    ("bom.py", f"\ufeffimport torch\ns = 'é'; {LOG_SOFTMAX}".encode()),
    ("cr.py", f"import torch\rs = 'é'; {LOG_SOFTMAX}".replace("\n", "\r").encode()),
])
def test_fix_writes_back_in_the_original_encoding(project, capsys, name, data):
    (project / name).write_bytes(data)
    assert run([name, "--no-cache", "--fix"], capsys)[0] == 0
    fixed = data.replace(b"torch.log(torch.softmax(y, 1))", b"torch.log_softmax(y, 1)")
    assert fixed != data and (project / name).read_bytes() == fixed


def test_decode_source():
    assert decode_source(b"\xef\xbb\xbfx = 1\n").encoding == "utf-8-sig"
    assert decode_source("# coding=latin-1\nx = 'é'\n".encode("latin-1")).text == "# coding=latin-1\nx = 'é'\n"
    with pytest.raises(SourceError) as error:
        decode_source(b"x = 1\ny = '\xff'\n")
    assert (error.value.line, error.value.column) == (2, 6)
    assert source_lines("a\x0cb\rc\r\nd\u2028e\n") == ["a\x0cb", "c", "d\u2028e"]


def test_a_second_bom_is_what_python_says(project, capsys):
    (project / "twice.py").write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfimport torch\n")
    code, found = findings(project, capsys)
    assert (code, found) == (1, [("twice.py", "TL001", 1, 1, "syntax error: invalid non-printable character U+FEFF")])
