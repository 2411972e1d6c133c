"""`torchlint run train.py [-- args]`: run an unchanged training script under process-wide checks."""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from torchlint.runtime.run import RunReport
from torchlint.runtime.watch import StopRun, Watch


def run_script(path: str, script_args: list[str], max_steps: int | None, explode_factor: float,
               on_step=None, snapshot: bool = False) -> tuple[RunReport, int]:
    """The report and the exit status the script itself would have had (torchlint's report comes on top)."""
    watcher = Watch(None, None, explode_factor=explode_factor, max_steps=max_steps, on_step=on_step,
                    snapshot=snapshot, files=[path])  # the script itself may hold the cause
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    status = 0
    try:
        with watcher:
            runpy.run_path(path, run_name="__main__")
    except StopRun:
        pass
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # the script's own error: its own traceback, then our report
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    report = RunReport(os.path.basename(path), [], "process", steps=watcher.step, events=watcher.events,
                       history=watcher.history, sources=watcher.sources())
    return report, status
