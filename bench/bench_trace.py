"""`torchlint trace` cost: wall time and peak RSS per model, each in a fresh process, against a
baseline process that only imports torch (and transformers, for `hf:` models): the one-off cost
every first trace pays. Targets (issue 16): a 6.7e9 and a 7e10 LLaMA config <= 2 s and <= 0.5 GB
over the imports, a second trace <= 0.5 s over them.

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
LLAMA_70B = ('{"hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80, '
             '"num_attention_heads": 64, "num_key_value_heads": 8}')
# (label, target, extra arguments, baseline row): fixtures are compared with `import torch`, Hugging Face
# models with `import torch` + `import transformers`
CASES = [
    ("import torch only (baseline)", None, [], None),
    ("import torch + transformers", "+transformers", [], None),
    ("MLP", "mlp.py:MLP", [], 0),
    ("attention", "attention.py:Attention", ["--input", "float32[B, T, 64]"], 0),
    ("LSTM tagger", "lstm_tagger.py:Tagger", [], 0),
    ("LLaMA-style 6.7e9 params", "llama.py:Llama", ["--input", "int64[B, T]"], 0),
    ("LLaMA, second trace (cache)", "llama.py:Llama", ["--input", "int64[B, T]"], 0),
    ("hf:llama (6.7e9 params)", "hf:llama", [], 1),
    ("hf:llama, second trace (cache)", "hf:llama", [], 1),
    ("hf:llama 70B config (6.9e10)", "hf:llama", ["--init-kwargs", LLAMA_70B], 1),
]

CHILD = """
import json, resource, sys, time
start = time.perf_counter()
import torch
if sys.argv[1] == "+transformers":
    import transformers  # noqa: F401
    code = 0
elif sys.argv[1] != "-":
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
        for label, target, extra, baseline in CASES:
            spec = target if target is None or target.startswith(("hf:", "+")) else str(MODELS / target)
            out = subprocess.run([sys.executable, "-c", CHILD, spec or "-", *extra], capture_output=True, text=True,
                                 check=True, cwd=folder)
            data = json.loads(out.stdout.strip().splitlines()[-1])
            results.append((label, data, baseline))
    print(f"{'model':<32} {'wall s':>7} {'peak RSS MB':>12} {'s over baseline':>16} {'RSS over baseline':>18}")
    for label, data, baseline in results:
        base = results[baseline][1] if baseline is not None else data
        print(f"{label:<32} {data['seconds']:7.2f} {data['rss_mb']:12.0f} {data['seconds'] - base['seconds']:16.2f} "
              f"{data['rss_mb'] - base['rss_mb']:17.0f}M")


if __name__ == "__main__":
    main()
