"""TL211 inplace-on-split-output: an in-place op on one of the views split/chunk/unbind return."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import is_inplace
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import nodes_in_scope, target_names

# functions returning several views of one tensor, which autograd forbids modifying in place
MULTI_VIEW = frozenset({"split", "chunk", "unbind", "split_with_sizes"})
_WANTED = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.Call)


class InplaceOnSplitOutput(Rule):
    info = RuleInfo(
        "TL211", "inplace-on-split-output", "error",
        "An in-place op on a view returned by split/chunk/unbind of a tensor that requires grad raises at run time.",
        tags=("autograd",),
    )

    def on_end(self, ctx: FileContext) -> None:
        splits = {id(call) for call in ctx.calls.values()
                  if call.name in MULTI_VIEW and _split_of(ctx, call.node) is not None}
        if not splits:
            return  # no split of a tensor that requires grad: most files
        for body in [ctx.module_body, *ctx.functions]:
            if body is not None and any(id(entry) in splits for entry in body.walk(expand=False)):
                self._scan(ctx, body.node)

    def _scan(self, ctx: FileContext, block) -> None:
        """The block's statements in source order (not those of nested functions): which names hold a
        view of a tensor that requires grad, and the in-place writes to them while they do."""
        views: dict[str, cst.Call] = {}  # name -> the split call it is a view of
        root = block.body.body if isinstance(block, cst.FunctionDef) and isinstance(block.body, cst.IndentedBlock) \
            else block.body if isinstance(block, cst.Module) else []
        for node in nodes_in_scope(root, _WANTED):
            if isinstance(node, cst.AugAssign):
                self._write(ctx, views, node.target, node)
                _unbind(views, node.target)
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and is_inplace(func.attr.value):
                    self._write(ctx, views, func.value, node)
            elif isinstance(node, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, cst.Subscript):
                        self._write(ctx, views, target.value, node)  # `part[0] = x`
                source = _split_of(ctx, node.value) if node.value is not None else None
                for target in targets:
                    _unbind(views, target)
                    if source is not None:
                        for name in target_names(target):
                            views[name.value] = source
            elif isinstance(node, cst.For):
                _unbind(views, node.target)
                source = _split_of(ctx, node.iter)  # `for part in x.chunk(4): part.mul_(2)`
                if source is not None:
                    for name in target_names(node.target):
                        views[name.value] = source

    def _write(self, ctx: FileContext, views: dict[str, cst.Call], target, node) -> None:
        while isinstance(target, cst.Subscript):  # `parts[0].mul_(2)` of `parts = x.chunk(2)`
            target = target.value
        if not isinstance(target, cst.Name) or target.value not in views:
            return
        split = views.pop(target.value)  # one finding per view
        ctx.report(
            self.info, node,
            f"`{ctx.code(node, 50)}` modifies `{target.value}` in place, a view returned by "
            f"`{ctx.code(split, 40)}` of a tensor that requires grad: autograd raises \"... is a view and is "
            "being modified inplace. This view is the output of a function that returns multiple views\". "
            "Use the out-of-place op and rebind the name (`b = b * 2` for `b *= 2`, `b = b.clamp(0)` for "
            "`b.clamp_(0)`), or clone the view first",
            related=((split, "the views are made here"),),
        )


def _split_of(ctx: FileContext, value) -> cst.Call | None:
    """The split/chunk/unbind call ``value`` is, when its input requires grad and grad mode is on."""
    while isinstance(value, cst.Subscript):  # `x.chunk(2)[0]`
        value = value.value
    if not isinstance(value, cst.Call):
        return None
    call = ctx.call(value)
    if call is None or call.name not in MULTI_VIEW or call.scope.no_grad:
        return None
    if call.form == "method":
        source = call.receiver
    elif (call.qual or "").startswith("torch.") and call.args:
        source = call.args[0]
    else:
        return None
    return value if source is not None and ctx.value(source).tracked is True else None


def _unbind(views: dict[str, cst.Call], target) -> None:
    for name in target_names(target):
        views.pop(name.value, None)
