"""`torchlint run --nproc-per-node N train.py args`: N ranks on this machine, as torchrun starts them.

Each rank is a `torchlint run train.py args` process with the environment torchrun gives
(`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`, and
`OMP_NUM_THREADS=1` unless set), so the script's `init_process_group()` finds its peers. The
ranks exchange their checks every step (see `ranks`) and stop together; rank 0 prints the one
report. The exit status is rank 0's, or the first other rank's that failed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

GRACE = 30.0  # seconds the other ranks get to finish after one failed, before they are stopped


def strip_option(own: list[str], name: str, ambiguous: tuple[str, ...] = ()) -> list[str]:
    """`own` without `name VALUE` / `name=VALUE` (or an unambiguous prefix of `name`, as argparse takes)."""
    out, index = [], 0
    while index < len(own):
        token = own[index]
        if token == "--":
            return out + own[index:]
        head = token.split("=", 1)[0]
        if len(head) > 2 and name.startswith(head) and not any(o.startswith(head) for o in ambiguous):
            index += 1 if "=" in token else 2
            continue
        out.append(token)
        index += 1
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rank_environments(count: int) -> list[dict[str, str]]:
    """The environment of each of `count` ranks on this machine, as torchrun gives it (one free port)."""
    port = _free_port()
    envs = []
    for rank in range(count):
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: N ranks must not each take every core
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(count), LOCAL_WORLD_SIZE=str(count),
                   GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        envs.append(env)
    return envs


def spawn_ranks(count: int, run_argv: list[str]) -> int:
    """Run `torchlint run *run_argv` as `count` ranks; the combined exit status."""
    command = [sys.executable, "-m", "torchlint", "run"]
    children = [subprocess.Popen([*command, *(["--no-progress"] if rank else []), *run_argv], env=env)
                for rank, env in enumerate(rank_environments(count))]
    try:
        statuses = _wait(children)
    except KeyboardInterrupt:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        for child in children:
            child.wait()
        return 130
    if statuses[0]:
        return statuses[0]
    return next((status for status in statuses if status), 0)


def _wait(children: list[subprocess.Popen]) -> list[int]:
    failed_at = None
    while any(child.poll() is None for child in children):
        if failed_at is None and any(child.returncode not in (None, 0) for child in children):
            failed_at = time.monotonic()  # a rank failed: the others may wait for it in a collective forever
        if failed_at is not None and time.monotonic() - failed_at > GRACE:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            break
        time.sleep(0.05)
    return [_status(child.wait()) for child in children]


def _status(code: int) -> int:
    return 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
