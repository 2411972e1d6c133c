"""The watch's forward hooks: where each outermost model call begins and ends, what it keeps.

Mixed into `Watch`. Torch calls them for every module (process-wide hooks, or one pair per module
of a watched model), so an inner call costs a push and a pop on the call stack and nothing else,
except on the few forward passes that look inside: ranks (the modules that ran), the first
convolution over images (TL912), the ReLU layers on the steps that measure them (TL913), and a
sharded model that no replay can run (its modules' outputs are probed as they are made). An
outermost call keeps its inputs and RNG state for a replay, and probes its output.
"""

from __future__ import annotations

import functools
import sys

import torch

from torchlint.runtime import replay
from torchlint.runtime.input_range import is_image_conv, raw_pixels_event
from torchlint.runtime.records import Call, StopRun
from torchlint.runtime.reductions import finiteness, float_outputs
from torchlint.runtime.repeated_forward import has_batchnorm, same_batch_event
from torchlint.runtime.wrappers import is_ddp, redirected, replays_alone, unwrapped

GRAD_BUDGET = 512 * 2**20  # bytes of outermost-output gradients kept per step for replays


class ForwardHooks:
    """The forward pre-hook and hook of `Watch` (its state is set up by `Watch.__init__`)."""

    def _on_pre_forward(self, module, args) -> None:
        if torch.compiler.is_compiling() or self._replaying or self._disabled:  # see the module's doc
            return
        if self._stack:  # an inner call: all it needs is its place on the stack (and, rarely, a look)
            self._stack.append(module)
            if self._inner_looks:
                self._look_inside(module, args)
            return
        try:
            if redirected(module):  # its inner calls are the outermost ones
                return
            # an outermost call begins: keep the RNG state its replay must start from
            self._settle_ranks()
            if self._loss_window is not None:
                self._loss_window.close()
            # evaluation under no_grad/inference_mode is not training: nothing of it is kept (a
            # validation pass between two steps would otherwise keep every batch alive)
            self._ignoring = not torch.is_grad_enabled()
            self._rng = None if self._ignoring else replay.rng_state()
            self._stack.append(module)
            self._recording_ran = self.ranks.enabled and is_ddp(module)  # for TL910: which modules ran
            self._inner_looks = self._recording_ran or (
                self._pixels_unchecked and not self._ignoring and self._has_image_conv(module))
            self._inner_outputs = not self._ignoring and self._cannot_replay(module)
            if self._inner_looks:
                self._look_inside(module, args)
        except StopRun:
            raise
        except Exception as error:
            self._internal_error(error)

    def _look_inside(self, module, args) -> None:
        """What a few checks need from every call: the modules that ran (ranks), the first image
        convolution's input (TL912)."""
        try:
            if self._recording_ran:
                self.ranks.ran.add(id(module))
            if self._pixels_unchecked and not self._ignoring and is_image_conv(module):
                self._pixels_unchecked = False  # the first convolution over images of the first training pass
                self._inner_looks = self._recording_ran
                event = raw_pixels_event(module, args, unwrapped(self._stack[0]), self.step + 1)
                if event is not None:
                    self._record(event)
        except StopRun:
            raise
        except Exception as error:
            self._internal_error(error)

    def _on_forward(self, module, args, *rest) -> None:
        """(module, args, kwargs, output) normally; (module, args, result) when torch calls a global
        `always_call` hook after the forward raised. Either way the call is over: leave it."""
        if torch.compiler.is_compiling() or self._replaying or self._disabled:
            return
        stack = self._stack
        if len(stack) > 1 and stack[-1] is module and len(rest) == 2:  # an inner call returns
            stack.pop()
            if self._measuring and not self._ignoring:
                self._dead.watch(module, rest[1])
            if self._inner_outputs:
                self._probe(module, rest[1], len(self._calls))
            return
        try:
            kwargs, output = rest if len(rest) == 2 else ({}, None)
            failed = len(rest) != 2 or (output is None and sys.exc_info()[1] is not None)
            self._left(module, args, kwargs, output, failed)
        except Exception as error:
            self._internal_error(error)

    def _left(self, module, args, kwargs, output, failed: bool) -> None:
        if not self._stack or self._stack[-1] is not module:  # its pre-hook did not run (an earlier hook raised)
            return
        self._stack.pop()
        if self._stack:  # an inner call that raised
            return
        if self._ignoring:
            self._ignoring = False
            return
        if failed:  # the forward raised: the call is not kept
            return
        call = Call(unwrapped(module), args, kwargs, self._rng)  # a replay must not run DDP's collectives
        self.ranks.outermost(module)
        if id(module) not in self._roots:
            self._roots[id(module)] = {type(m) for m in module.modules()}
        if module.training and has_batchnorm(self._roots[id(module)]):  # TL914
            event = same_batch_event(self, call)
            if event is not None:
                self._record(event)
        call_index = len(self._calls)  # calls are numbered in completion order of the outermost ones
        self._calls.append(call)
        out = self._probe(module, output, call_index)
        if out is not None and out.requires_grad:
            self._graphs.mark(out, self.step, "output", keep=functools.partial(self._keep_grad, call))
        if self._loss_window is not None:  # what follows, up to backward(), makes the loss
            self._loss_window.open()

    def _probe(self, module, output, call_index: int) -> torch.Tensor | None:
        """A value per floating-point output tensor, finite when it is (read at the step); the first
        such tensor, or None."""
        outputs = float_outputs(output)
        if not outputs:
            return None
        self._probes.extend(finiteness([t.detach() for t in outputs]))  # detached: no graph for the check
        self._probe_keys.extend([(module, call_index)] * len(outputs))
        return outputs[0]

    def _has_image_conv(self, module) -> bool:
        key = id(module)
        if key not in self._image_convs:
            self._image_convs[key] = any(is_image_conv(sub) for sub in module.modules())
        return self._image_convs[key]

    def _cannot_replay(self, module) -> bool:
        """A sharded model (see `wrappers.replays_alone`): no replay can localise its NaN, so the
        outputs of its modules are checked as they are made."""
        key = id(module)
        if key not in self._unreplayable:
            self._unreplayable[key] = not replays_alone(unwrapped(module))
        return self._unreplayable[key]

    def _keep_grad(self, call: Call, grad: torch.Tensor) -> None:
        size = grad.numel() * grad.element_size()
        if self._grad_bytes + size <= GRAD_BUDGET:
            call.grad_out = grad
            self._grad_bytes += size
