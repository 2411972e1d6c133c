"""`torchlint server` under typing: time from didChange to publishDiagnostics, and memory over many edits.

A ~2,000-line training script is built from the top-level statements of the bundled fixtures (as
bench_notebook.py does). A real client process (tests/lsp_client.py) opens it and then types into a
comment line in the middle (``--into string``: into a string literal on a line of code, an edit
that changes the code), one character per didChange (an incremental edit), in bursts: within a
burst the keystrokes come every --interval-ms; after the last one the client waits for the
diagnostics of that version. The latency of each burst is from its last didChange to the
publishDiagnostics for that version (debounce included); every publication is checked to carry
the version it was computed for. The server's RSS is read from /proc after the document is opened
and at every 10% of the edits. Targets (issue 14): p95 <= 50 ms, memory flat.

    python bench/bench_server.py [--edits 1000] [--burst 10] [--interval-ms 30] [--into comment|string]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_notebook import statements  # noqa: E402
from lsp_client import LspClient  # noqa: E402

from torchlint.api import check_source  # noqa: E402


def build(lines: int) -> str:
    chunks, total, index = [], 0, 0
    pieces = statements()
    while total < lines:
        chunk = pieces[index % len(pieces)].rstrip("\n") + "\n\n"
        chunks.append(chunk)
        total += chunk.count("\n")
        index += 1
    return "".join(chunks)


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def engine_times(source: str, runs: int) -> tuple[list, list[float]]:
    times, found = [], []
    for _ in range(runs):
        started = time.perf_counter()
        found = check_source(source, "train.py")
        times.append(time.perf_counter() - started)
    return found, times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=10, help="keystrokes per burst (a wait for diagnostics after each)")
    parser.add_argument("--checks", type=int, default=3, help="in-process checks timed before and after")
    parser.add_argument("--interval-ms", type=float, default=30.0, help="time between keystrokes in a burst")
    parser.add_argument("--into", choices=("comment", "string"), default="comment",
                        help="type into a comment line, or into a string literal on a line of code")
    args = parser.parse_args()

    source = build(args.lines)
    lines = source.splitlines(keepends=True)
    middle = len(lines) // 2
    while lines[middle - 1].strip():  # a blank line: the comment line goes there, at module level
        middle += 1
    prefix = "# typing here: " if args.into == "comment" else 'typed = "typing here: '
    typed_line = prefix + ("\n" if args.into == "comment" else '"\n')
    source = "".join(lines[:middle]) + typed_line + "".join(lines[middle:])
    edit_line, column = middle, len(prefix)
    direct, before = engine_times(source, args.checks)
    print(f"script: {source.count(chr(10))} lines, {len(direct)} findings")

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        uri = (root / "train.py").as_uri()
        client = LspClient(cwd=root)
        client.initialize(root)
        client.open(uri, source)
        first = client.diagnostics(uri, version=1, timeout=300)
        assert len(first["diagnostics"]) == len(direct), "the server and the API disagree"
        memory = [(0, rss_mb(client.process.pid))]
        latencies: list[float] = []
        version = 1
        for edit in range(args.edits):
            version += 1
            char = "abcdefghijklmnopqrstuvwxyz"[edit % 26]
            sent = client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": edit_line, "character": column},
                                              "end": {"line": edit_line, "character": column}}, "text": char}]})
            column += 1
            if column > 80:  # start the comment over: delete what was typed
                version += 1
                sent = client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": edit_line, "character": len(prefix)},
                                                  "end": {"line": edit_line, "character": column}}, "text": ""}]})
                column = len(prefix)
            if (edit + 1) % args.burst == 0 or edit + 1 == args.edits:
                message = client.wait_for(lambda m, v=version: m.get("method") == "textDocument/publishDiagnostics"
                                          and m["params"]["version"] == v, timeout=300)
                latencies.append(message["_at"] - sent)
                assert len(message["params"]["diagnostics"]) == len(direct)
            else:
                time.sleep(args.interval_ms / 1000)
            if (edit + 1) % max(1, args.edits // 10) == 0:
                memory.append((edit + 1, rss_mb(client.process.pid)))
        client.call("shutdown")
        versions = [m["params"]["version"] for m in client.seen if m.get("method") == "textDocument/publishDiagnostics"]
        client.notify("exit")
        code, stderr = client.finish()
    if stderr:
        print("server stderr:\n" + stderr[-2000:])
    assert versions == sorted(set(versions)), "a publication for an older version came after a newer one"

    _, after = engine_times(source, args.checks)
    engine = statistics.median(before + after)
    print(f"one check of the script in this process (the floor of the latency): median {engine * 1000:.0f} ms "
          f"of {len(before + after)} runs, half before and half after the session")
    print(f"{args.edits} edits in bursts of {args.burst} ({args.interval_ms:.0f} ms apart), "
          f"{len(latencies)} waits; {len(versions)} publications for {version} versions, all current; exit {code}")
    print(f"didChange -> publishDiagnostics: p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"p95 {percentile(latencies, 0.95) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms (target p95 <= 50 ms)")
    print("server RSS (MB) after N edits: " + ", ".join(f"{n}: {mb:.1f}" for n, mb in memory))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
