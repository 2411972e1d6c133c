"""`torchlint run train.py args` / `-m pkg.mod args`: run an unchanged program under process-wide checks."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass

from torchlint.runtime.attach import attached
from torchlint.runtime.launch import Program, execute
from torchlint.runtime.run import RunReport
from torchlint.runtime.watch import StopRun, Watch

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


@dataclass
class Outcome:
    """How the program ended: its exit status, and whether it left on its own before any step."""

    status: int
    exited_early: bool = False  # SystemExit with zero steps watched (`--help`): no report


def exit_status(code) -> int:
    """The status `python` gives `sys.exit(code)`: None 0, an int itself, anything else 1 (printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _users_part(tb):
    """The traceback from the program's first frame on, as `python train.py` would print it."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    start = tb
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name.startswith(here) or name in (runpy.__file__, "<frozen runpy>")):
            return tb
        tb = tb.tb_next
    return start


def run_script(program: Program, max_steps: int | None, explode_factor: float,
               on_step=None, snapshot: bool = False, sync: bool = False) -> tuple[RunReport, Outcome]:
    """The report and how the program ended (torchlint's report comes on top of its own output)."""
    file = program.file()
    watcher = Watch(None, None, explode_factor=explode_factor, max_steps=max_steps, on_step=on_step,
                    snapshot=snapshot, sync=sync, files=[file] if file else [])  # the script itself may hold the cause
    outcome = Outcome(0)
    try:
        with watcher, attached():
            execute(program)
    except StopRun:
        pass
    except SystemExit as exit_:
        outcome = Outcome(exit_status(exit_.code), exited_early=watcher.step == 0)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", file=sys.stderr)
        outcome = Outcome(EXIT_INTERRUPTED)
    except BaseException as error:  # the script's own error: its own traceback, then our report
        traceback.print_exception(type(error), error, _users_part(error.__traceback__))
        outcome = Outcome(1)
    name = program.name if program.module else os.path.basename(program.target)
    events = [*watcher.setup, *watcher.events]  # a framework's set-up problems come before the first step
    for annotate in watcher.annotators:
        annotate(events)
    report = RunReport(name, [], "process", steps=watcher.step, events=events,
                       history=watcher.history, sources=watcher.sources())
    if watcher.ranks.ranks is not None:
        report.rank, report.world = watcher.ranks.ranks.rank, watcher.ranks.ranks.size
    return report, outcome
