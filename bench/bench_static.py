"""Static checker throughput, measured in one run on one corpus, as ratios to baselines.

Corpus: the installed torch package's Python sources and the ``models/`` tree of a
transformers wheel (fetched once with ``pip download --no-deps`` into bench/.corpus).
By default every 4th file of each (deterministic); ``--every 1`` takes all of them.

Measured, in this order:
  parse       bare ``libcst.parse_module`` over the files torchlint parses (prefilter passed)
  parse-nogc  the same loop with the cyclic GC paused per file, as torchlint does
  cold -j1  torchlint, no cache, one process (in this process, like the baseline)
  cold -j2  torchlint, no cache, two worker processes
  warm      torchlint with a cache populated by a previous run
  torchfix  TorchFix's CLI with -j 1 on the same files (installed into its own venv)

Targets (issue 2): cold -j1 <= 1.5x parse; >= 10x TorchFix throughput; warm <= 3% of cold.

    python bench/bench_static.py [--every N] [--no-torchfix]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import libcst as cst

from torchlint.api import check_files
from torchlint.config import Settings
from torchlint.static.engine import might_have_findings

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus"
TRANSFORMERS = "transformers==5.23.0"


def transformers_models() -> Path:
    target = CORPUS / "tf" / "transformers" / "models"
    if target.is_dir():
        return target
    CORPUS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", TRANSFORMERS, "-d", str(CORPUS)],
                   check=True)
    wheel = next(CORPUS.glob("transformers-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.startswith("transformers/models/")]
        archive.extractall(CORPUS / "tf", members)
    return target


def torch_sources() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def torchfix_cli() -> Path | None:
    venv = CORPUS / "torchfix-venv"
    exe = venv / "bin" / "torchfix"
    if exe.exists():
        return exe
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "torchfix"], check=True)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"TorchFix unavailable: {error}", file=sys.stderr)
        return None
    return exe


def corpus_files(every: int) -> list[Path]:
    roots = [r for r in (torch_sources(), transformers_models()) if r is not None]
    files: list[Path] = []
    for root in roots:
        files.extend(sorted(root.rglob("*.py"))[::every])
    return files


def timed(label: str, action) -> float:
    start = time.perf_counter()
    action()
    elapsed = time.perf_counter() - start
    print(f"  {label:<10} {elapsed:8.2f} s", flush=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=4, help="take every Nth file of each corpus (default 4)")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved repetitions; the best is kept")
    parser.add_argument("--no-torchfix", action="store_true")
    args = parser.parse_args()

    files = corpus_files(args.every)
    texts = {f: f.read_text(encoding="utf-8", errors="replace") for f in files}
    parsed = [f for f in files if might_have_findings(texts[f])]
    lines = sum(t.count("\n") for t in texts.values())
    print(f"corpus: {len(files)} files, {lines} lines; {len(parsed)} files pass the prefilter and are parsed")

    work = Path(tempfile.mkdtemp(prefix="torchlint-bench-"))
    try:
        # The same bytes for every tool: a private copy, so the cache lives in the temp dir.
        copies = []
        for index, file in enumerate(files):
            copy = work / "src" / f"f{index:05d}_{file.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(texts[file], encoding="utf-8")
            copies.append(copy)
        settings = Settings(root=work)

        def parse_all(pause_gc: bool = False) -> None:
            for file in parsed:
                if pause_gc:
                    gc.disable()
                try:
                    cst.parse_module(texts[file])
                except cst.ParserSyntaxError:
                    pass
                finally:
                    gc.enable()

        check_files(copies, settings, jobs=2, cache=True)  # populate the cache for the warm runs
        runs = {
            "parse": parse_all,
            "parse-nogc": lambda: parse_all(pause_gc=True),
            "cold -j1": lambda: check_files(copies, settings, jobs=1, cache=False),
            "cold -j2": lambda: check_files(copies, settings, jobs=2, cache=False),
            "warm": lambda: check_files(copies, settings, jobs=1, cache=True),
        }
        best = {name: float("inf") for name in runs}
        print(f"timings (best of {args.repeat}, interleaved):")
        for _ in range(args.repeat):
            for name, action in runs.items():
                start = time.perf_counter()
                action()
                best[name] = min(best[name], time.perf_counter() - start)
        for name, seconds in best.items():
            print(f"  {name:<10} {seconds:8.2f} s")
        parse, parse_nogc, cold1, cold2, warm = (best[n] for n in runs)
        torchfix = None
        exe = None if args.no_torchfix else torchfix_cli()
        if exe is not None:
            torchfix = timed("torchfix", lambda: subprocess.run(
                [str(exe), "-j", "1", str(work / "src")], capture_output=True,
                env={**os.environ, "PYTHONWARNINGS": "ignore"}))

        print("ratios:")
        print(f"  cold -j1 / parse      = {cold1 / parse:5.2f}x   (target <= 1.5x)")
        print(f"  cold -j1 / parse-nogc = {cold1 / parse_nogc:5.2f}x   (baseline also pausing the cyclic GC)")
        print(f"  cold -j2 / cold -j1   = {cold2 / cold1:5.2f}x")
        print(f"  warm / cold -j1       = {warm / cold1:6.2%}   (target <= 3%)")
        if torchfix is not None:
            print(f"  torchfix / cold -j1   = {torchfix / cold1:5.1f}x   (target >= 10x: torchlint throughput "
                  "over TorchFix's, same files, one job each)")
        print(f"  throughput cold -j1   = {lines / cold1:,.0f} lines/s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
