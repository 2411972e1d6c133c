"""Command line: `torchlint [check] PATH...`, `torchlint rule CODE`, `torchlint rules`, `torchlint server`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from torchlint import __version__
from torchlint.catalog import all_rules, rule_text
from torchlint.config import ConfigError, Settings, load_settings, parse_size
from torchlint.output import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from torchlint.output import emit as _emit
from torchlint.paths import check_named_paths

COMMANDS = ("check", "rule", "rules", "trace", "run", "server")
CHECK_FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit", "pylint", "concise")  # report.FORMATS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for every usage error
        raise ConfigError(message)


def _codes(text: str) -> list[str]:
    return [part.strip().upper() for part in text.split(",") if part.strip()]


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="torchlint", description="Lint PyTorch code for NaN/Inf, autograd, "
                     "training-loop, memory and reproducibility bugs.")
    parser.add_argument("--version", action="version", version=f"torchlint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="lint files and directories (the default command)")
    check.add_argument("paths", nargs="*", help="files or directories (default: .); - reads stdin")
    check.add_argument("--select", type=_codes, help="codes or prefixes to enable (replaces the default set); ALL for every rule")
    check.add_argument("--extend-select", type=_codes, default=[], help="codes or prefixes to enable on top")
    check.add_argument("--ignore", type=_codes, default=[], help="codes or prefixes to disable")
    check.add_argument("--output-format", choices=CHECK_FORMATS, default="text")
    check.add_argument("-o", "--output-file", type=Path, help="write the report to this file")
    check.add_argument("--statistics", action="store_true", help="print counts per rule instead of findings")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--no-cache", action="store_true", help="do not read or write .torchlint_cache/")
    check.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    check.add_argument("--config", type=Path, help="pyproject.toml to read [tool.torchlint] from")
    check.add_argument("--fix", action="store_true", help="apply safe fixes to the files")
    check.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: also apply unsafe fixes")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff; write nothing")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude to files named on the command line too (for pre-commit)")
    check.add_argument("--stdin-filename", metavar="PATH", help="read stdin as this file: exclude, per-file-ignores "
                       "and the notebook format (.ipynb) apply by this name")
    check.add_argument("--max-file-size", type=_size, metavar="SIZE",
                       help="skip (with a note) files bigger than this, e.g. 5MB; 0: no limit (default: 5MB)")
    check.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to the lines of every current finding")
    check.add_argument("--baseline", type=Path, metavar="FILE", help="report only findings this baseline does not hold")
    check.add_argument("--write-baseline", type=Path, metavar="FILE", help="write the current findings to FILE as a "
                       "baseline, report nothing")

    trace = sub.add_parser("trace", help="trace a model with torch.fx: symbolic shapes per layer, shape errors")
    trace.add_argument("target", help="model.py:Net, package.module:Net, a factory function, or hf:MODEL_TYPE / "
                                      "hf:config.json (a transformers architecture without weights)")
    trace.add_argument("--input", action="append", default=[], metavar="SPEC",
                       help="input as dtype[dims], e.g. 'float32[B, 3, 224, 224]' (repeatable); inferred if absent")
    trace.add_argument("--init", help="constructor expression evaluated in the target's module, e.g. 'Net(d=512)'")
    trace.add_argument("--init-kwargs", help="JSON keyword arguments for the constructor, e.g. '{\"d\": 512}'")
    trace.add_argument("--dims", metavar="B=8,T=4096", help="evaluate the cost formulas at these sizes")
    trace.add_argument("--optimizer", choices=("adamw", "adam", "sgd", "momentum", "rmsprop", "adagrad", "none"),
                       default="adamw", help="whose state the training memory counts (default adamw)")
    trace.add_argument("--output-format", choices=("text", "json", "sarif", "github"), default="text",
                       help="text/json: the per-layer table and findings; sarif/github: the findings")
    trace.add_argument("-o", "--output-file", type=Path, help="write the report to this file")
    trace.add_argument("--no-cache", action="store_true", help="do not read or write .torchlint_cache/trace/ (a "
                       "second trace of an unchanged model is answered from there)")

    run = sub.add_parser("run", usage="torchlint run [options] SCRIPT.py [script args...] | -m MODULE [script args...] "
                         "| model.py:Net [options]",
                         help="run a training script unchanged (train.py args..., -m module args...) or train a model "
                         "class (model.py:Net) for a few steps, watching for NaN/Inf")
    run.add_argument("target", nargs="?", help="train.py (run unchanged; everything after it is the script's), or "
                     "model.py:Net / package.module:Net / a factory")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE` does; "
                     "everything after it is the module's")
    run.add_argument("--max-steps", type=int, help="scripts: stop after this many optimizer steps")
    run.add_argument("--nproc-per-node", type=int, metavar="N", help="scripts: run N ranks on this machine, as "
                     "torchrun does (the script calls init_process_group); the ranks stop together, rank 0 reports")
    run.add_argument("--input", action="append", default=[], metavar="SPEC", help="as for trace; B is 8, other names 16")
    run.add_argument("--init", help="constructor expression, as for trace")
    run.add_argument("--init-kwargs", help="JSON constructor keyword arguments, as for trace")
    run.add_argument("--steps", type=int, default=100)
    run.add_argument("--loss", choices=("mse", "ce"), default="mse", help="against synthetic targets")
    run.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    run.add_argument("--lr", type=float)
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    run.add_argument("--explode-factor", type=float, default=1e3, help="TL903 when the grad norm exceeds this x its median")
    run.add_argument("--repro", type=int, metavar="K", help="run the first K steps twice (a script: in two fresh "
                     "processes; a model: from the same seeds) and compare losses and parameters bitwise (TL905)")
    run.add_argument("--output-format", choices=("text", "json", "sarif", "github"), default="text",
                     help="text/json: the whole report with a per-step summary; sarif/github: the runtime findings")
    run.add_argument("-o", "--output-file", type=Path, help="write the report to this file")
    run.add_argument("--snapshot", action="store_true", help="keep each step's starting state (parameters, gradients, "
                     "optimizer state) to replay an update that leaves NaN parameters op by op (TL906); costs a copy "
                     "per step")
    run.add_argument("--sync", action="store_true", help="on a GPU, read every step's check at its own step (the "
                     "host waits for the GPU once per step); by default a step the GPU is still busy with is read "
                     "when the next one begins")
    run.add_argument("--no-progress", action="store_true", help="no progress line on stderr (it is shown only on "
                     "a terminal, and never when CI is set)")

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code")
    sub.add_parser("rules", help="list the rule catalog")
    server = sub.add_parser("server", help="language server for editors (LSP over stdio; needs torchlint[lsp])")
    server.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only transport)")
    server.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning",
                        help="what the server logs on stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "check")
    try:
        parser = build_parser()
        script_args: list[str] = []
        if argv[0] == "run":
            from torchlint.run_args import split_run_argv

            own, script_args = split_run_argv(_subparser(parser, "run"), argv[1:])
            argv = ["run", *own]
        args = parser.parse_args(argv)
        args.script_args = script_args
        args.run_argv = argv[1:]
        if args.command == "rules":
            return _list_rules()
        if args.command == "rule":
            return _show_rule(args.code)
        if args.command == "trace":
            return _trace(args)
        if args.command == "server":
            from torchlint.server import serve

            return serve(args.log_level)
        if args.command == "run":
            from torchlint.run_command import run

            return run(args)
        return _check(args)
    except ConfigError as error:
        print(f"torchlint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `torchlint ... | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _settings(args: argparse.Namespace) -> Settings:
    if args.config is not None and not args.config.exists():
        raise ConfigError(f"config file not found: {args.config}")
    start = Path(args.stdin_filename or args.paths[0]) if args.stdin_filename or args.paths else Path.cwd()
    if not start.exists():
        start = start.parent if start.parent.exists() else Path.cwd()
    settings = load_settings(args.config, start)
    if args.max_file_size is not None:
        settings.max_file_size = args.max_file_size
    if args.select is not None:
        settings.select = args.select
    settings.extend_select += args.extend_select
    settings.ignore += args.ignore
    settings.validate()
    return settings


def _check(args: argparse.Namespace) -> int:
    from torchlint import adopt
    from torchlint.api import check_files
    from torchlint.report import FORMATS

    if args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    stdin = "-" in args.paths or args.stdin_filename is not None
    baseline = adopt.prepare(args, stdin)
    if stdin:
        if args.paths not in ([], ["-"]):
            raise ConfigError("stdin (- or --stdin-filename) cannot be combined with other paths")
        from torchlint.stdin import check_stdin

        return check_stdin(args, _settings(args), _emit, baseline)
    args.paths = args.paths or ["."]
    check_named_paths(args.paths)
    settings = _settings(args)
    results = check_files(args.paths, settings, jobs=args.jobs, cache=not args.no_cache,
                          force_exclude=args.force_exclude)
    for result in results:
        if result.skipped:
            print(f"torchlint: note: skipped {result.path}: {result.skipped}; raise the limit with "
                  "--max-file-size or max-file-size in the config", file=sys.stderr)
    if not results:  # as ruff does: a warning, exit 0
        print(f"torchlint: warning: no Python files found under {', '.join(args.paths)}", file=sys.stderr)
    if args.add_noqa:
        return adopt.add_noqa_comments(results, args.exit_zero)
    if args.fix or args.diff:
        changed = _apply_fixes(results, settings, args)
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    if args.write_baseline is not None:
        return adopt.write_baseline(args, findings)
    findings = adopt.without_baseline(args, baseline, findings)
    to_terminal = args.output_file is None and sys.stdout.isatty()
    report = FORMATS[args.output_format](
        findings, statistics=args.statistics, color=to_terminal and not os.environ.get("NO_COLOR"),
        root=str(settings.root if settings.source else Path.cwd()), files=[r.path for r in results if r.skipped is None],
    )
    if args.output_format == "text" and not any(result.skipped is None for result in results):
        report = "No files were checked.\n"  # not "All checks passed!"
    _emit(report, args.output_file)
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _apply_fixes(results, settings: Settings, args: argparse.Namespace) -> int:
    """Fix (or diff) each file that has an applicable fix; results get the findings that remain."""
    from dataclasses import replace

    from torchlint.fix import applicable
    from torchlint.source import SourceError, encode_source, read_source
    from torchlint.static.discovery import relative_to_root
    from torchlint.static.notebook_check import diff_any, fix_any

    changed = fixed = 0
    for result in results:
        if not any(applicable(f, args.unsafe_fixes) for f in result.findings):
            continue
        path = Path(result.path)
        try:
            original = read_source(path)
        except (OSError, SourceError):
            continue
        before = original.text
        local = replace(settings, ignore=settings.ignore + settings.ignored_for(relative_to_root(path, settings)))
        outcome = fix_any(before, result.path, local, unsafe=args.unsafe_fixes)
        if outcome.source == before:
            continue
        changed += 1
        fixed += outcome.fixed
        if args.diff:
            sys.stdout.write(diff_any(result.path, before, outcome.source))
            continue
        try:
            path.write_bytes(encode_source(outcome.source, original.encoding))  # its encoding, BOM kept
        except UnicodeEncodeError:  # a fix's text the file's encoding cannot hold: leave the file as it is
            continue
        except OSError as error:
            raise ConfigError(f"cannot write {path}: {error.strerror}") from None
        result.findings = outcome.remaining
    verb = "Would fix" if args.diff else "Fixed"
    print(f"{verb} {fixed} finding{'s' if fixed != 1 else ''} in {changed} file{'s' if changed != 1 else ''}.",
          file=sys.stderr)
    return changed


def _trace(args: argparse.Namespace) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ConfigError("torchlint trace needs torch: pip install 'torchlint[torch]'") from None
    from torchlint.graph import trace_cache

    request = {name: getattr(args, name) for name in ("target", "input", "init", "init_kwargs", "dims",
                                                      "optimizer", "output_format")}
    key = None if args.no_cache else trace_cache.entry_key(request)
    cached = trace_cache.load(key) if key else None
    if cached is not None:
        text, status = cached
        _emit(text, args.output_file)
        return status
    reads = trace_cache.Reads()
    with reads.recording():
        text, status = _trace_anew(args)
    if key:
        trace_cache.store(key, reads, text, status)
    _emit(text, args.output_file)
    return status


def _trace_anew(args: argparse.Namespace) -> tuple[str, int]:
    """The report's text and the exit status of one trace."""
    from torchlint.graph.costs import summarise
    from torchlint.graph.errors import TraceInputError
    from torchlint.graph.formulas import parse_dims
    from torchlint.graph.inputs import parse_input
    from torchlint.graph.render import render_trace_json, render_trace_text
    from torchlint.graph.shapes import infer_inputs, propagate, trace
    from torchlint.graph.target import load_target

    try:
        dims = parse_dims(args.dims)
        inputs = [parse_input(text) for text in args.input]
        target = load_target(args.target, args.init, args.init_kwargs)
        if not inputs and target.inputs:
            inputs = list(target.inputs)
            target.notes.append(f"no --input given; token ids {', '.join(map(str, inputs))}")
        elif not inputs:
            inputs, assumed = infer_inputs(target.model)
            target.notes.append(f"no --input given; assumed {assumed}")
        graph = trace(target, inputs)
        report = propagate(target, graph, inputs)
        if not any(f.code == "TL601" for f in report.findings):  # a graph that stopped has no whole cost
            report.costs = summarise(report.rows, graph, target.model, args.optimizer)
            if dims:
                _replay_peak(report, graph, target.model, dims)
    except TraceInputError as error:
        raise ConfigError(str(error)) from None
    report.findings = _merge_depths(report.findings)
    if args.output_format in ("text", "json"):
        text = (render_trace_json if args.output_format == "json" else render_trace_text)(report, dims)
    else:
        from torchlint.report import FORMATS

        text = FORMATS[args.output_format](report.findings, root=os.getcwd())
    return text, EXIT_FINDINGS if report.findings else EXIT_OK


def _replay_peak(report, graph, model, dims: dict[str, int]) -> None:
    """The training step's peak at ``dims``, when they give every symbol a value."""
    from torchlint.graph.formulas import Formulas
    from torchlint.graph.peak import optimizer_step_extra, training_peak

    costs = report.costs
    formulas = Formulas(report.symbols.names, dims)
    if formulas.unknown([costs.training]):
        return
    resident = formulas.value(costs.weights + costs.optimizer_state)
    costs.peak = training_peak(graph, report.meter.sizes, formulas.value, resident,
                               formulas.value(costs.trainable), optimizer_step_extra(model, costs.optimizer))


def _merge_depths(graph_findings):
    """A graph finding the static checker also reports at the same line is one finding, marked with both."""
    from dataclasses import replace

    from torchlint.api import check_paths

    files = sorted({f.path for f in graph_findings if os.path.isfile(f.path)})
    static = {(f.code, os.path.abspath(f.path), f.line): f for f in check_paths(files)} if files else {}
    merged = []
    for finding in graph_findings:
        twin = static.get((finding.code, os.path.abspath(finding.path), finding.line))
        merged.append(replace(twin, path=finding.path, depths=("static", "graph")) if twin else finding)
    return merged


def _list_rules() -> int:
    print(f"{'code':<7} {'name':<30} {'severity':<8} {'default':<7} fix")
    for info in all_rules():
        default = "on" if info.default_enabled else "off"
        print(f"{info.code:<7} {info.name:<30} {info.severity:<8} {default:<7} {'yes' if info.fixable else '-'}")
    return EXIT_OK


def _show_rule(code: str) -> int:
    try:
        print(rule_text(code))
    except KeyError:
        raise ConfigError(f"unknown rule: {code.upper()}") from None
    return EXIT_OK
