"""`torchlint run`: a model target trained on synthetic data, a script run unchanged, or N ranks of one."""

from __future__ import annotations

import argparse
import os
import sys

from torchlint.config import ConfigError
from torchlint.output import EXIT_FINDINGS, EXIT_OK, emit


def run(args: argparse.Namespace) -> int:
    try:
        import torch
    except ImportError:
        raise ConfigError("torchlint run needs torch: pip install 'torchlint[torch]'") from None
    from torchlint.graph.errors import TraceInputError
    from torchlint.graph.inputs import parse_input
    from torchlint.graph.shapes import infer_inputs
    from torchlint.graph.target import load_target
    from torchlint.run_args import is_script
    from torchlint.runtime.progress import Progress
    from torchlint.runtime.run import run_model

    if args.steps < 1 or (args.repro is not None and args.repro < 1):
        raise ConfigError("--steps and --repro must be at least 1")
    if args.max_steps is not None and args.max_steps < 1:
        raise ConfigError("--max-steps must be at least 1")
    if args.module is not None or args.target is None:
        return _run_script(args)
    if is_script(args.target):
        return _run_script(args)
    if args.nproc_per_node is not None:
        raise ConfigError("--nproc-per-node runs a script as several ranks (torchlint run --nproc-per-node 2 "
                          "train.py); a model target trains in one process")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available")
    progress = Progress(total=args.steps) if not args.no_progress else None
    try:
        specs = [parse_input(text) for text in args.input]
        torch.manual_seed(0)  # the same initial weights on every run: a finding can be reproduced
        target = load_target(args.target, args.init, args.init_kwargs, on_meta=False)
        if not specs:
            specs, assumed = infer_inputs(target.model)
            target.notes.append(f"no --input given; assumed {assumed}")
        report = run_model(target, specs, args.steps, args.loss, args.optimizer, args.lr, args.device,
                           args.explode_factor, on_step=progress, snapshot=args.snapshot, sync=args.sync)
        if args.repro:
            from torchlint.runtime.run import check_repro

            build = lambda: load_target(args.target, args.init, args.init_kwargs, on_meta=False).model  # noqa: E731
            event = check_repro(build, specs, args.repro, args.loss, args.optimizer, args.lr,
                                str(target.source) if target.source else None)
            _add_repro(report, event, f"--repro: {args.repro} steps twice from the same seeds: bitwise identical")
    except TraceInputError as error:
        raise ConfigError(str(error)) from None
    except RuntimeError as error:  # the model itself fails on the synthetic data
        raise ConfigError(f"running {args.target} failed: {' '.join(str(error).split())[:200]}") from None
    finally:
        if progress is not None:
            progress.close()
    return _emit_run(report, args, EXIT_OK)


def _add_repro(report, event, identical: str) -> None:
    """The TL905 event, or the line that says both runs were bitwise identical."""
    if event is not None:
        report.events.append(event)
    else:
        report.repro.append(identical)


def _run_script(args: argparse.Namespace) -> int:
    from torchlint.runtime.launch import LaunchError, Program
    from torchlint.runtime.progress import Progress
    from torchlint.runtime.script import run_script

    if args.module is None and args.target is None:
        raise ConfigError("run needs a script, -m MODULE or a model target: torchlint run [options] train.py [args]")
    program = (Program(args.module, args.script_args, module=True) if args.module is not None
               else Program(args.target, args.script_args))
    try:
        program.check()
    except LaunchError as error:
        raise ConfigError(str(error)) from None
    if args.nproc_per_node is not None:
        return _spawn_ranks(args)
    # under torchrun every rank runs torchlint: one progress line (rank 0's), one report
    progress = Progress(total=args.max_steps) if not args.no_progress and os.environ.get("RANK", "0") == "0" else None
    try:
        report, outcome = run_script(program, args.max_steps, args.explode_factor, on_step=progress,
                                     snapshot=args.snapshot, sync=args.sync)
    finally:
        if progress is not None:
            progress.close()
    if outcome.exited_early:  # `train.py --help`, or a usage error of its own: the script's word is the last
        return outcome.status
    if report.rank:  # the ranks exchanged their events: rank 0 reports for all of them
        return outcome.status
    if args.repro and outcome.status != 130:
        from torchlint.runtime.repro import script_runs_differ
        from torchlint.runtime.run import repro_event

        difference, reached = script_runs_differ(program, args.repro)
        identical = (f"--repro: {args.repro} steps in two fresh processes: bitwise identical" if reached >= args.repro
                     else f"--repro: the script made {reached} optimizer step(s) of {args.repro}; those were "
                     "bitwise identical in two fresh processes")
        _add_repro(report, repro_event(difference, report.sources), identical)
    sys.stdout.flush()
    return _emit_run(report, args, outcome.status)


def _spawn_ranks(args: argparse.Namespace) -> int:
    from torchlint.runtime.spawn import spawn_ranks, strip_option

    if args.nproc_per_node < 1:
        raise ConfigError("--nproc-per-node must be at least 1")
    if args.repro:
        raise ConfigError("--repro runs the script in fresh single processes; it cannot be combined with "
                          "--nproc-per-node")
    own = strip_option(args.run_argv, "--nproc-per-node", ambiguous=("--no-progress", "--no-cache"))
    return spawn_ranks(args.nproc_per_node, [*own, *args.script_args])


def _emit_run(report, args: argparse.Namespace, status: int) -> int:
    from torchlint.runtime.render import render_run, render_run_json, run_findings
    from torchlint.runtime.run import settle

    settle(report, repro_ran=bool(args.repro))
    if args.output_format == "text":
        text = render_run(report)
    elif args.output_format == "json":
        text = render_run_json(report)
    else:
        from torchlint.report import FORMATS

        text = FORMATS[args.output_format](run_findings(report), root=os.getcwd())
    emit(text, args.output_file)
    if status:  # a script that failed keeps its own exit status
        return status
    return EXIT_FINDINGS if report.events else EXIT_OK
