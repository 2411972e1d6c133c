"""Fuzzing and scale for the static engine: every real file at hand, then mutations of real PyTorch code.

Scale: the standard library, the interpreter's site-packages (the installed torch package among them),
the bare git mirrors under /work/.mirror/*/repo (read with ``git cat-file``; skipped when absent) and
any ``--root DIR``; identical files once. Every file goes through what ``torchlint check`` does with
every rule on and the torch/numpy prefilter off: decode as Python does, parse, walk, locate.

Mutations: real PyTorch files (the fixtures, pytorch/examples when mirrored, torch.nn's modules) cut
short, with lines deleted or duplicated, tokens swapped, random bytes replaced or inserted, brackets
or operators repeated, a BOM or coding line added. Each mutant is checked, and when it has fixes they
are applied (unsafe ones too) as ``--fix`` would.

Every input runs under a per-file time limit; a file over it counts as a TL002-style "gave up"
finding, never a hang. Counted as failures: crashes (any exception out of the engine), hangs,
a file CPython rejects that gets neither TL001 nor TL002 (when it mentions torch or numpy), and a fix
that leaves source CPython no longer parses. Exit status 1 when there is any.

    python bench/fuzz_static.py [--mutations 100000] [--jobs 2] [--time-limit 30] [--root DIR ...]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import random
import re
import resource
import signal
import subprocess
import sys
import sysconfig
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

os.environ["TORCHLINT_STRICT"] = "1"  # a rule's exception is a crash here, not a skipped file
warnings.simplefilter("ignore")  # CPython's SyntaxWarnings about the mutants

from torchlint.config import Settings  # noqa: E402
from torchlint.fix import applicable, fix_source  # noqa: E402
from torchlint.source import SourceError, decode_source  # noqa: E402
from torchlint.static.engine import check_text, might_have_findings  # noqa: E402

HERE = Path(__file__).resolve().parent
MIRRORS = Path(os.environ.get("TORCHLINT_MIRRORS", "/work/.mirror"))
ALL = Settings(select=["ALL"])
ENABLED = ALL.enabled()


class _GaveUp(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """SIGALRM after ``seconds``: the file is abandoned with a finding instead of hanging the run."""
    def alarm(signum, frame):
        raise _GaveUp

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def python_rejects(data: bytes | str) -> bool:
    try:
        with warnings.catch_warnings():  # also when imported by the tests
            warnings.simplefilter("ignore")
            compile(data, "<fuzz>", "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def check_input(job: tuple[str, bytes, float, bool]) -> tuple[str, str, str, float]:
    """(name, outcome, detail, seconds); outcome: ok, finding, gave-up, crash, missed or broken-fix."""
    name, data, limit, fix = job
    start = time.perf_counter()
    outcome, detail = "ok", ""
    try:
        with time_limit(limit):
            try:
                text = decode_source(data).text
            except SourceError as error:
                return name, "finding", f"TL002 {error.reason}", time.perf_counter() - start
            findings = check_text(text, name, ENABLED, prefilter=False)
            codes = {f.code for f in findings}
            if codes & {"TL001", "TL002"}:
                outcome = "finding"
            elif might_have_findings(text) and python_rejects(data):
                outcome, detail = "missed", "CPython rejects it; no TL001/TL002"
            if fix and any(applicable(f, True) for f in findings):
                result = fix_source(text, name, ALL, unsafe=True)
                if result.source != text and python_rejects(result.source):
                    outcome, detail = "broken-fix", "the fixed source no longer parses"
    except _GaveUp:
        outcome, detail = "gave-up", f"TL002 gave up after {limit:g} s"
    except Exception as error:  # noqa: BLE001 - what this script looks for
        frame = traceback.extract_tb(error.__traceback__)[-1]
        detail = f"{type(error).__name__}: {str(error)[:120]} at {Path(frame.filename).name}:{frame.lineno}"
        outcome = "crash"
    return name, outcome, detail, time.perf_counter() - start


# -- inputs ---------------------------------------------------------------------------------------
def real_files(roots: list[Path]) -> list[tuple[str, bytes]]:
    """(name, bytes) of every .py file under the roots and in the mirrors, identical contents once."""
    seen: set[bytes] = set()
    found: list[tuple[str, bytes]] = []

    def add(name: str, data: bytes) -> None:
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest not in seen:
            seen.add(digest)
            found.append((name, data))

    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if root.name != "site-packages" and "site-packages" in path.relative_to(root).parts:
                continue  # the stdlib root: its site-packages is a root of its own
            try:
                add(str(path), path.read_bytes())
            except OSError:
                continue
    for name, data in mirror_files():
        add(name, data)
    return found


def mirror_files() -> list[tuple[str, bytes]]:
    files = []
    for git_dir in sorted(MIRRORS.glob("*/repo")):
        listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "HEAD"],
                                 capture_output=True, text=True)
        blobs = [(line.split()[2], line.split("\t", 1)[1]) for line in listing.stdout.splitlines()
                 if line.endswith(".py") and " blob " in line]
        if not blobs:
            continue
        batch = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], capture_output=True,
                               input="".join(f"{sha}\n" for sha, _ in blobs).encode())
        out, offset = batch.stdout, 0
        for _sha, path in blobs:
            header_end = out.index(b"\n", offset)
            size = int(out[offset:header_end].split()[2])
            files.append((f"{git_dir.parent.name}:{path}", out[header_end + 1:header_end + 1 + size]))
            offset = header_end + 1 + size + 1
    return files


def pytorch_seeds() -> list[bytes]:
    """Real PyTorch code to mutate: small files first, so many mutants fit in the time."""
    seeds = [p.read_bytes() for p in sorted((HERE.parent / "fixtures").rglob("*.py"))]
    examples = [d for name, d in mirror_files() if name.startswith("pytorch+examples:")] if MIRRORS.is_dir() else []
    seeds += [d for d in examples if len(d) < 20_000]
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        nn = Path(list(spec.submodule_search_locations)[0]) / "nn" / "modules"
        seeds += [p.read_bytes() for p in sorted(nn.glob("*.py")) if p.stat().st_size < 30_000]
    return [s for s in seeds if b"torch" in s]


_TOKEN = re.compile(rb"\w+|[^\w\s]")


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One random mutation: (its kind, the mutant)."""
    kind = rng.choice(MUTATIONS)
    lines = data.splitlines(keepends=True) or [b""]
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data) + 1)]
    if kind == "delete-lines":
        start = rng.randrange(len(lines))
        return kind, b"".join(lines[:start] + lines[start + rng.randint(1, 3):])
    if kind == "duplicate-line":
        index = rng.randrange(len(lines))
        return kind, b"".join(lines[:index + 1] + lines[index:])
    if kind == "swap-tokens":
        tokens = list(_TOKEN.finditer(data))
        if len(tokens) < 2:
            return kind, data
        a, b = sorted(rng.sample(tokens, 2), key=lambda m: m.start())
        return kind, data[:a.start()] + b.group() + data[a.end():b.start()] + a.group() + data[b.end():]
    if kind == "random-bytes":
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(out) + 1)
            piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
            out[position:position + rng.choice((0, len(piece)))] = piece
        return kind, bytes(out)
    if kind == "repeat":  # deep nesting and long chains: brackets or operators repeated
        position = rng.randrange(len(data) + 1)
        return kind, data[:position] + rng.choice((b"(", b"[", b"-", b"+1", b"not ", b"\\\n")) * \
            rng.choice((10, 300, 3000)) + data[position:]
    if kind == "indent":
        index = rng.randrange(len(lines))
        lines[index] = rng.choice((b"\t", b"    ", b" ", b"\x0c")) + lines[index]
        return kind, b"".join(lines)
    if kind == "newlines":
        return kind, data.replace(b"\n", rng.choice((b"\r\n", b"\r")))
    # "encoding": a BOM, or a coding line the rest may not match
    header = rng.choice((b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\n", b"# coding: utf-16\n", b"# coding: cp1252\n"))
    return kind, header + data


MUTATIONS = ("truncate", "delete-lines", "duplicate-line", "swap-tokens", "random-bytes", "repeat", "indent",
             "newlines", "encoding")


def mutants(count: int, seed: int = 0) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    seeds = pytorch_seeds()
    found = []
    for index in range(count):
        kind, data = mutate(rng.choice(seeds), rng)
        if rng.random() < 0.3:  # some inputs get two mutations
            second, data = mutate(data, rng)
            kind = f"{kind}+{second}"
        found.append((f"mutant{index:06d}-{kind}", data))
    return found


# -- running ----------------------------------------------------------------------------------------
def run_all(inputs: list[tuple[str, bytes]], jobs: int, limit: float, fix: bool) -> dict:
    jobs_list = [(name, data, limit, fix) for name, data in inputs]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(check_input, jobs_list, chunksize=16))
    else:
        results = [check_input(job) for job in jobs_list]
    tally: dict = {"inputs": len(results), "outcomes": {}, "failures": [], "slowest": ("", 0.0)}
    for name, outcome, detail, seconds in results:
        tally["outcomes"][outcome] = tally["outcomes"].get(outcome, 0) + 1
        if outcome in ("crash", "missed", "broken-fix", "gave-up"):
            tally["failures"].append(f"{outcome}: {name}: {detail}")
        if seconds > tally["slowest"][1]:
            tally["slowest"] = (name, seconds)
    return tally


def peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, workers) / 1024


def report(title: str, tally: dict, seconds: float) -> None:
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(tally["outcomes"].items()))
    name, slowest = tally["slowest"]
    print(f"{title}: {tally['inputs']} inputs in {seconds:.0f} s ({outcomes})")
    print(f"  slowest: {slowest:.2f} s {name}")
    print(f"  peak memory (largest process): {peak_mb():.0f} MB")
    for line in tally["failures"][:40]:
        print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutations", type=int, default=100_000, help="mutants to check (default 100000)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per input (default 30)")
    parser.add_argument("--root", type=Path, action="append", default=[], help="another folder of real files")
    parser.add_argument("--no-real", action="store_true", help="mutations only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    failures = 0
    if not args.no_real:
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        roots = [stdlib, Path(sysconfig.get_paths()["purelib"]), *args.root]
        roots += [p for p in (HERE / ".corpus" / "tf", HERE / ".corpus" / "real") if p.is_dir()]
        start = time.perf_counter()
        files = real_files([r for r in dict.fromkeys(roots) if r.is_dir()])
        tally = run_all(files, args.jobs, args.time_limit, fix=False)
        report(f"real files ({len(files)} distinct)", tally, time.perf_counter() - start)
        failures += len(tally["failures"])
    if args.mutations:
        start = time.perf_counter()
        tally = run_all(mutants(args.mutations, args.seed), args.jobs, args.time_limit, fix=True)
        report(f"mutations of real PyTorch files (seed {args.seed})", tally, time.perf_counter() - start)
        failures += len(tally["failures"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
