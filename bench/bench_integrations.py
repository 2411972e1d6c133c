"""Overhead of the framework integrations, in one process: the Hugging Face `Trainer` with and without
`TorchlintCallback`, and an Accelerate loop with and without `torchlint.integrations.accelerate.watch`.

Trainer: a tiny GPT-2 built from a config (1 layer, 32-wide, vocabulary 64, sequences of 64 tokens,
batch 8, nothing downloaded), `--steps` optimizer steps per `train()`; the time is that of `train()`
itself. Accelerate: a 4 x Linear(256, 256) MLP, batch 64, SGD. Rounds are interleaved (the order
alternates); the best time of each kind and the median of the per-round ratios are printed. CPU,
one thread (`torch.set_num_threads(1)`) so that the figures do not depend on the other processes.

    python bench/bench_integrations.py [--steps 30] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def trainer_run(callback: bool, steps: int, out: str) -> float:
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from torchlint.integrations.transformers import TorchlintCallback

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=64,
                                       bos_token_id=0, eos_token_id=0))
    rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (8 * steps, 64))]
    args = TrainingArguments(output_dir=out, max_steps=steps, per_device_train_batch_size=8, report_to=[],
                             save_strategy="no", use_cpu=True, disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[TorchlintCallback()] if callback else None)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def accelerate_run(watched: bool, steps: int) -> float:
    from accelerate import Accelerator

    from torchlint.integrations.accelerate import watch

    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())])
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(64, 256), torch.randn(64, 256)

    def loop():
        for _ in range(steps):
            accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
            optimizer.step()
            optimizer.zero_grad()

    start = time.perf_counter()
    if watched:
        with watch(accelerator, model, optimizer):
            loop()
    else:
        loop()
    return time.perf_counter() - start


def compare(name: str, run, rounds: int) -> None:
    run(False), run(True)  # warm-up: imports, first-call costs
    times = {False: [], True: []}
    for index in range(rounds):
        for kind in ((False, True) if index % 2 == 0 else (True, False)):
            times[kind].append(run(kind))
    ratios = [w / p for p, w in zip(times[False], times[True], strict=True)]
    print(f"{name}: plain best {min(times[False]):.3f} s, watched best {min(times[True]):.3f} s, "
          f"median ratio {statistics.median(ratios):.2f}x over {rounds} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as out:
        compare(f"Trainer, tiny GPT-2, {args.steps} steps", lambda cb: trainer_run(cb, args.steps, out), args.rounds)
    compare(f"Accelerate loop, 4 x Linear(256), {args.steps} steps", lambda w: accelerate_run(w, args.steps),
            args.rounds)


if __name__ == "__main__":
    main()
