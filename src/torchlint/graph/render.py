"""The per-layer table (text) and the JSON form of a trace report."""

from __future__ import annotations

import json
import os

from torchlint.graph.formulas import Formulas
from torchlint.graph.shapes import TraceReport
from torchlint.report.json_format import finding_json
from torchlint.report.text import render_text


def render_trace_text(report: TraceReport, dims: dict[str, int] | None = None) -> str:
    formulas = _formulas(report, dims)
    out = [f"{report.target}: inputs {', '.join(str(i) for i in report.inputs)}"]
    out.extend(f"note: {note}" for note in report.notes)
    headers = ("node", "module", "op", "output shape", "dtype", "params", "FLOPs", "saved for backward", "source")
    cell = formulas.flops_cell, formulas.bytes_cell
    rows = [(r.node, r.module, r.op, r.shape, r.dtype, f"{r.params:,}" if r.params else "",
             cell[0](r.flops), cell[1](r.saved),
             f"{os.path.basename(r.file)}:{r.line}" if r.file else "") for r in report.rows]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    out.extend(["", line, "-" * len(line)])
    for row in rows:
        cells = [c.rjust(w) if i == 5 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
    out.append(f"\n{len(report.rows)} nodes, {report.parameters:,} parameters "
               "(built on the meta device: no memory used for them)")
    if report.costs is not None:
        out.extend(["", *cost_lines(report, formulas)])
    out.append("")
    out.append(render_text(report.findings).rstrip("\n"))
    return "\n".join(out) + "\n"


def cost_lines(report: TraceReport, formulas: Formulas) -> list[str]:
    costs = report.costs
    both = formulas.both
    unknown = formulas.unknown([costs.training, costs.forward_flops])
    at = ", ".join(f"{k}={v}" for k, v in formulas.dims.items())
    head = f"cost per step (at {at})" if formulas.dims and not unknown else \
        "cost per step (formulas in the symbolic dims; --dims B=8,T=4096 evaluates them)"
    lines = [head,
             f"  forward FLOPs       {both(costs.forward_flops, 'flops')}",
             f"  training FLOPs      {both(costs.training_flops, 'flops')} (backward counted as 2 × forward)",
             f"  weights             {both(costs.weights, 'bytes')} (parameters and buffers)",
             f"  training memory     {both(costs.training, 'bytes')} with {costs.optimizer}: weights, "
             f"gradients {both(costs.trainable, 'bytes')}, optimizer state {both(costs.optimizer_state, 'bytes')}, "
             f"activations saved for backward {both(costs.saved, 'bytes')}, output and its gradient "
             f"{both(2 * costs.output, 'bytes')}"]
    if costs.peak is not None:
        lines.append(f"  training peak       {formulas.bytes(costs.peak)}: the step replayed over the graph at "
                     "these sizes (activations freed after their last use, gradients in flight, the optimizer's "
                     "temporaries)")
    if costs.training_checkpointed is not None:
        lines.append(f"  with activation checkpointing of the {costs.block_count} blocks in {costs.blocks}: "
                     f"{both(costs.training_checkpointed, 'bytes')} (activations "
                     f"{both(costs.checkpointed, 'bytes')})")
    if costs.kv_per_token is not None:
        kv = costs.kv_per_token
        lines.append(f"  inference memory    weights + KV cache {formulas.bytes(kv)} per token of each sequence "
                     f"(from {costs.kv_source})")
        names = [str(s) for s in report.inputs[0].dims if isinstance(s, str)] if report.inputs else []
        if len(names) >= 2 and not formulas.unknown([costs.weights]) and all(n in formulas.dims for n in names[:2]):
            tokens = formulas.dims[names[0]] * formulas.dims[names[1]]
            lines[-1] += f"; at {names[0]}·{names[1]} = {tokens:,} tokens: " \
                         f"{formulas.bytes(costs.weights + kv * tokens)}"
    if unknown and formulas.dims:
        lines.append(f"  --dims gives no value for {', '.join(unknown)}")
    return lines


def render_trace_json(report: TraceReport, dims: dict[str, int] | None = None) -> str:
    formulas = _formulas(report, dims)
    data = {
        "target": report.target,
        "inputs": [str(i) for i in report.inputs],
        "notes": report.notes,
        "parameters": report.parameters,
        "layers": [{"node": r.node, "module": r.module, "op": r.op, "shape": r.shape, "dtype": r.dtype,
                    "params": r.params, "flops": formulas.raw(r.flops), "saved_bytes": formulas.raw(r.saved),
                    "file": r.file, "line": r.line} for r in report.rows],
        "findings": [finding_json(f) for f in report.findings],
    }
    costs = report.costs
    if costs is not None:
        data["costs"] = {
            "dims": formulas.dims,
            "optimizer": costs.optimizer,
            "forward_flops": formulas.raw(costs.forward_flops),
            "weights_bytes": formulas.raw(costs.weights),
            "gradients_bytes": formulas.raw(costs.trainable),
            "optimizer_state_bytes": formulas.raw(costs.optimizer_state),
            "saved_activations_bytes": formulas.raw(costs.saved),
            "training_bytes": formulas.raw(costs.training),
            "training_checkpointed_bytes": formulas.raw(costs.training_checkpointed),
            "training_peak_bytes": round(costs.peak) if costs.peak is not None else None,
            "checkpointed_blocks": costs.blocks or None,
            "kv_cache_bytes_per_token": formulas.raw(costs.kv_per_token),
        }
    return json.dumps(data, indent=2) + "\n"


def _formulas(report: TraceReport, dims: dict[str, int] | None) -> Formulas:
    names = report.symbols.names if report.symbols is not None else {}
    return Formulas(names, dims or {})
