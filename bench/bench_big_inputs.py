"""Big inputs: one large file and a many-file project, as ratios to a bare LibCST parse, with peak memory.

The inputs are generated from real PyTorch code (the repository's fixtures, and the installed torch
package's ``nn/modules`` when present), repeated until the wanted size, so every rule has work to do.

Each measurement runs in a fresh process; it reports its wall time and its peak memory above the
process's own size after imports (``ru_maxrss``; for the project, the worker processes' peak too):

  parse      bare ``libcst.parse_module`` of each file (cyclic GC paused per file, as torchlint does)
  torchlint  ``check_files`` with no cache (one process for the big file, ``--jobs`` for the project)

Targets (issue 17): one big file <= 1.5x the parse's time and <= 2x its memory.

    python bench/bench_big_inputs.py [--lines 50000] [--files 10000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"

# Runs in a child process: argv = [mode, jobs, file...]; prints {"seconds", "peak_mb", "children_mb"}.
CHILD = r"""
import gc, json, resource, sys, time
from pathlib import Path
import libcst as cst
from torchlint.api import check_files
from torchlint.config import Settings
mode, jobs, files = sys.argv[1], int(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if mode == "parse":
    for file in files:
        gc.disable()
        try:
            cst.parse_module(file.read_bytes().decode("utf-8"))
        except cst.ParserSyntaxError:
            pass
        finally:
            gc.enable()
else:
    check_files(files, Settings(root=files[0].parent, max_file_size=0), jobs=jobs, cache=False)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "children_mb": children / 1024}))
"""


def real_sources() -> list[str]:
    """Real PyTorch code that parses: the fixtures, and torch.nn's modules when torch is installed."""
    files = sorted(FIXTURES.rglob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        files += sorted((Path(list(spec.submodule_search_locations)[0]) / "nn" / "modules").glob("*.py"))
    texts = []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        try:
            compile(text, str(file), "exec", flags=1024)  # ast only: skip fixtures that are syntax errors
        except (SyntaxError, ValueError):
            continue
        if "torch" in text:
            texts.append(text if text.endswith("\n") else text + "\n")
    return texts


def big_file(path: Path, lines: int, texts: list[str]) -> Path:
    chunks, count, index = [], 0, 0
    while count < lines:
        text = texts[index % len(texts)]
        chunks.append(text)
        count += text.count("\n")
        index += 1
    path.write_text("".join(chunks), encoding="utf-8")
    return path


def project(folder: Path, files: int, texts: list[str]) -> list[Path]:
    paths = []
    for index in range(files):
        path = folder / f"pkg{index // 500:03d}" / f"m{index:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[index % len(texts)], encoding="utf-8")
        paths.append(path)
    return paths


def measure(mode: str, files: list[Path], jobs: int = 1) -> dict[str, float]:
    if len(files) > 200:  # a long argv: pass the folder's files through a list file instead
        listing = files[0].parents[1] / "files.txt"
        listing.write_text("\n".join(map(str, files)))
        code = CHILD.replace("[Path(p) for p in sys.argv[3:]]",
                             "[Path(p) for p in Path(sys.argv[3]).read_text().splitlines()]")
        argv = [sys.executable, "-c", code, mode, str(jobs), str(listing)]
    else:
        argv = [sys.executable, "-c", CHILD, mode, str(jobs), *map(str, files)]
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def report(title: str, parse: dict[str, float], ours: dict[str, float], workers: bool = False) -> None:
    print(title)
    print(f"  parse      {parse['seconds']:8.2f} s   peak +{parse['peak_mb']:7.1f} MB")
    extra = f"   workers' peak {ours['children_mb']:7.1f} MB" if workers else ""
    print(f"  torchlint  {ours['seconds']:8.2f} s   peak +{ours['peak_mb']:7.1f} MB{extra}")
    print(f"  ratios: time {ours['seconds'] / parse['seconds']:.2f}x (target <= 1.5x), "
          f"memory {ours['peak_mb'] / max(parse['peak_mb'], 0.1):.2f}x (target <= 2x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=50_000, help="lines of the big file (default 50000)")
    parser.add_argument("--files", type=int, default=10_000, help="files of the project (default 10000; 0: skip)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the project (default 2)")
    args = parser.parse_args()

    texts = real_sources()
    work = Path(tempfile.mkdtemp(prefix="torchlint-big-"))
    try:
        (work / "big").mkdir()
        big = big_file(work / "big" / "big.py", args.lines, texts)
        size = big.stat().st_size / 1e6
        report(f"one file: {args.lines} lines, {size:.1f} MB", measure("parse", [big]), measure("check", [big]))
        if args.files:
            files = project(work / "proj", args.files, texts)
            lines = sum(t.count("\n") for t in texts) * args.files // len(texts)
            report(f"project: {args.files} files, ~{lines} lines, --jobs {args.jobs}",
                   measure("parse", files), measure("check", files, args.jobs), workers=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
