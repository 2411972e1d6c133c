"""A whole project: cold run, re-run after editing one file, a pre-commit run, peak memory.

The project is the installed torch package's own sources (copied to a temporary folder with a
``pyproject.toml``, so imports between its modules resolve as in any project). Every measurement
is a fresh ``python -m torchlint`` process, timed from outside (wall time, ``ru_maxrss`` of the
child), so start-up and the cache's load and save are counted:

  cold        ``-j 1`` with an empty cache, over the first N files (folder order, default 1,000)
  edit        the same command after appending a function to one leaf module
  pre-commit  the same cache, five named files (the edited one and four others), as a hook passes them
  memory      ``-j 1``, no cache, over the whole package: the process's peak resident memory

Targets (issue 11): edit <= 1 s and <= 3% of cold; pre-commit <= 1 s; memory <= 500 MB.

    python bench/bench_project.py [--files 1000] [--no-memory]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def torch_sources() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def copy_project(source: Path, target: Path, limit: int | None) -> list[Path]:
    """The first `limit` .py files of the package (sorted by path), with their folders' __init__.py."""
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    chosen = files if limit is None else files[:limit]
    target.mkdir(parents=True, exist_ok=True)
    (target / "pyproject.toml").write_text("[tool.torchlint]\n")
    copied = []
    for file in chosen:
        destination = target / "torch" / file.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, destination)
        copied.append(destination)
    return copied


def run(arguments: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and the child's peak resident memory (MB) of one torchlint process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "torchlint", *arguments], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"torchlint failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024


def leaf(files: list[Path], root: Path) -> Path:
    """A module no other copied module imports by its dotted name (its edit re-checks only itself)."""
    texts = [f.read_text(errors="replace") for f in files]
    for file in files:
        if file.name == "__init__.py" or file.stat().st_size < 2000:
            continue
        dotted = ".".join(file.relative_to(root).with_suffix("").parts)
        stem = file.stem
        if not any(dotted in text or f"import {stem}" in text or f".{stem} import" in text
                   for other, text in zip(files, texts, strict=True) if other != file):
            return file
    return files[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--no-memory", action="store_true", help="skip the whole-package memory run")
    args = parser.parse_args(argv)
    source = torch_sources()
    if source is None:
        print("torch is not installed: nothing to measure")
        return 0
    env_note = f"torch sources at {source}"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        files = copy_project(source, root, args.files)
        lines = sum(f.read_bytes().count(b"\n") for f in files)
        print(f"{len(files)} files, {lines:,} lines ({env_note})")
        cold, cold_mb = run(["-j", "1", "--exit-zero", "torch"], root)
        edited = leaf(files, root)
        with edited.open("a") as handle:
            handle.write("\n\ndef _bench_edit(x):\n    return x + 1\n")
        edit, _ = run(["-j", "1", "--exit-zero", "torch"], root)
        others = [f for f in files if f != edited and f.name != "__init__.py"][:4]
        named = [str(p.relative_to(root)) for p in (edited, *others)]
        with edited.open("a") as handle:
            handle.write("\n\ndef _bench_edit_again(x):\n    return x + 2\n")
        hook, _ = run(["-j", "1", "--exit-zero", *named], root)
        print(f"cold, 1 job, empty cache:        {cold:7.2f} s   peak {cold_mb:6.0f} MB")
        print(f"re-run after editing {edited.relative_to(root)}: {edit:7.2f} s   {edit / cold:.1%} of cold")
        print(f"pre-commit, 5 named files, warm: {hook:7.2f} s")
    if args.no_memory:
        return 0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        files = copy_project(source, root, None)
        seconds, peak = run(["-j", "1", "--no-cache", "--exit-zero", "torch"], root)
        print(f"whole package, {len(files)} files, 1 job, no cache: {seconds:7.2f} s   peak {peak:6.0f} MB")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
