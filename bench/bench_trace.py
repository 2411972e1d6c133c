"""`torchlint trace` cost: wall time and peak RSS per model, each in a fresh process, against a
baseline process that only imports torch (the one-off cost every first trace pays).

Every process runs in one fresh temporary folder, so the trace cache (``.torchlint_cache/trace``)
starts empty: each model's first trace is traced, and the last case, the same LLaMA command
again, is answered from the cache.

    python bench/bench_trace.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
CASES = [
    ("import torch only (baseline)", None, []),
    ("MLP", "mlp.py:MLP", []),
    ("attention", "attention.py:Attention", ["--input", "float32[B, T, 64]"]),
    ("LSTM tagger", "lstm_tagger.py:Tagger", []),
    ("LLaMA-style 6.7e9 params", "llama.py:Llama", ["--input", "int64[B, T]"]),
    ("LLaMA, second trace (cache)", "llama.py:Llama", ["--input", "int64[B, T]"]),
]

CHILD = """
import json, resource, sys, time
start = time.perf_counter()
import torch
if sys.argv[1] != "-":
    from torchlint.cli import main
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["trace", sys.argv[1], "--output-format", "json", *sys.argv[2:]])
else:
    code = 0
print(json.dumps({"seconds": time.perf_counter() - start, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "code": code}))
"""


def main() -> None:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for label, target, extra in CASES:
            spec = str(MODELS / target) if target else "-"
            out = subprocess.run([sys.executable, "-c", CHILD, spec, *extra], capture_output=True, text=True,
                                 check=True, cwd=folder)
            data = json.loads(out.stdout.strip().splitlines()[-1])
            results.append((label, data))
    base = results[0][1]
    print(f"{'model':<28} {'wall s':>7} {'peak RSS MB':>12} {'s over import':>14} {'RSS over import':>16}")
    for label, data in results:
        print(f"{label:<28} {data['seconds']:7.2f} {data['rss_mb']:12.0f} {data['seconds'] - base['seconds']:14.2f} "
              f"{data['rss_mb'] - base['rss_mb']:15.0f}M")


if __name__ == "__main__":
    main()
