"""The Python API and the promise that the static core never imports torch."""

import subprocess
import sys

from torchlint import Finding, check_paths, check_source
from torchlint.config import Settings


def test_check_source_returns_findings():
    findings = check_source("import torch\np = torch.sigmoid(z)\nq = torch.log(p)\n", "demo.py")
    assert len(findings) == 1
    finding = findings[0]
    assert isinstance(finding, Finding)
    assert (finding.code, finding.name, finding.path, finding.line, finding.column) == (
        "TL102", "log-of-probability", "demo.py", 3, 5)
    assert (finding.end_line, finding.end_column) == (3, 17)
    assert finding.message == ("`torch.log(p)`: `p` is a sigmoid output; log underflows to -inf where "
                               "logsigmoid(x) stays finite")


def test_check_source_respects_settings():
    source = "import torch\nq = torch.log(torch.sigmoid(z))\n"
    assert check_source(source, settings=Settings(ignore=["TL102"])) == []


def test_check_paths_on_a_directory(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ny = torch.log(torch.sigmoid(z))\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "b.py").write_text("import torch\ny = torch.log(torch.sigmoid(z))\n")
    findings = check_paths([tmp_path])
    assert [(f.code, f.line) for f in findings] == [("TL102", 2)]


def test_static_core_does_not_import_torch(tmp_path):
    script = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now raises ImportError\n"
        "from torchlint.cli import main\n"
        f"raise SystemExit(main([{str(tmp_path)!r}, '--no-cache', '--output-format', 'sarif']))\n"
    )
    (tmp_path / "m.py").write_text("import torch\ny = torch.log(torch.softmax(x, 1))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert '"ruleId": "TL102"' in result.stdout
