"""Runtime overhead, one run, same model: plain step vs `torchlint.watch` (and with its opt-in
per-step snapshot) vs detect_anomaly on every step.

Models (`--model`):
- `mlp` (default): 8 x Linear(1024, 1024) with ReLU, batch 256, SGD, float32 (about 1.6 ms a step
  on an H100, where the host's launch work is most of the step);
- `encoder`: a bfloat16 `nn.TransformerEncoder` (6 layers, width 1024, 16 heads, batch 16 x 512
  tokens), AdamW (over 10 ms a step on an H100); `--small` shrinks it for a CPU try.

Rounds are interleaved (the order rotates); the best of each kind and the median of the per-round
ratios are printed. Each watch is timed after `--warm` untimed steps: a run's first steps also read
the parameter norms and the ReLU layers, which a long run does one step in ten. On CUDA, host syncs per step (CUDA's sync debug mode) and kernels per step (the
profiler) are counted for the plain and the watched step. CUDA is used when available.

    python bench/bench_runtime.py [--model mlp|encoder] [--steps 20] [--rounds 3] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

import torchlint


def make(kind: str, device, small: bool):
    """(model, optimizer, batch maker) for one kind of model."""
    torch.manual_seed(0)
    if kind == "mlp":
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).to(device)
        x, y = torch.randn(256, 1024, device=device), torch.randn(256, 1024, device=device)
        return model, torch.optim.SGD(model.parameters(), lr=1e-3), lambda: torch.nn.functional.mse_loss(model(x), y)
    width, heads, layers, batch, tokens = (128, 4, 2, 4, 64) if small else (1024, 16, 6, 16, 512)
    layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device, torch.bfloat16)
    x = torch.randn(batch, tokens, width, device=device, dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, optimizer, lambda: model(x).float().pow(2).mean()


def steps(optimizer, loss_of, n):
    for _ in range(n):
        optimizer.zero_grad()
        loss_of().backward()
        optimizer.step()


def timed(device, fn) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def syncs_per_step(fn, n: int) -> float:
    """Host waits for the device per step, as CUDA's sync debug mode warns of them."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(n)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught) / n


def kernels_per_step(fn, n: int) -> float:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(n)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type.name == "CUDA") / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("mlp", "encoder"), default="mlp")
    parser.add_argument("--small", action="store_true", help="a small encoder, for a try on CPU")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--no-extra", action="store_true", help="plain and watched only")
    parser.add_argument("--sync-too", action="store_true", help="also the watch with sync=True")
    parser.add_argument("--warm", type=int, default=20, help="untimed steps of each watch before its timed ones")
    args = parser.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    model, optimizer, loss_of = make(args.model, device, args.small)
    steps(optimizer, loss_of, 3)  # warm-up

    warm = args.warm

    def plain(n=args.steps):
        steps(optimizer, loss_of, n)

    def timed_plain() -> float:
        return timed(device, plain)

    def timed_watch(**options) -> float:
        """Steps of a watch that has already run `--warm` steps (the first steps also read the
        parameter norms and the ReLU layers: a long run's steps read them one step in ten)."""
        with torchlint.watch(model, optimizer, **options):
            steps(optimizer, loss_of, warm)
            return timed(device, plain)

    def timed_anomaly() -> float:
        with torch.autograd.detect_anomaly(check_nan=True):
            return timed(device, plain)

    kinds = [("plain", timed_plain), ("torchlint.watch", timed_watch)]
    if args.sync_too:
        kinds.append(("watch(sync=True)", lambda: timed_watch(sync=True)))
    if not args.no_extra:
        kinds += [("watch(snapshot)", lambda: timed_watch(snapshot=True)), ("detect_anomaly", timed_anomaly)]
    times: dict[str, list[float]] = {name: [] for name, _ in kinds}
    for round_ in range(args.rounds):
        for offset in range(len(kinds)):  # rotate the order each round: no kind always runs first
            name, fn = kinds[(round_ + offset) % len(kinds)]
            times[name].append(fn() / args.steps)
    print(f"device {device} ({torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}), model "
          f"{args.model}{' (small)' if args.small else ''}, {args.steps} steps x {args.rounds} interleaved rounds "
          f"(each watch timed after {warm} steps)")
    for name, _ in kinds:
        ratios = sorted(t / p for t, p in zip(times[name], times["plain"], strict=True))
        print(f"  {name:<16} best {min(times[name]) * 1000:8.2f} ms/step   {min(times[name]) / min(times['plain']):.3f}x "
              f"plain (best/best)   median per-round ratio {statistics.median(ratios):.3f}x")
    if device.type == "cuda":
        def in_watch(count, n):
            with torchlint.watch(model, optimizer):
                steps(optimizer, loss_of, warm)
                return count(plain, n)

        print(f"  host syncs per step: plain {syncs_per_step(plain, 10):.1f}, watched "
              f"{in_watch(syncs_per_step, 10):.1f} (10 steps, after {warm})")
        print(f"  CUDA kernels per step: plain {kernels_per_step(plain, 10):.1f}, watched "
              f"{in_watch(kernels_per_step, 10):.1f} (10 steps, after {warm}: one of them reads the parameters)")


if __name__ == "__main__":
    main()
