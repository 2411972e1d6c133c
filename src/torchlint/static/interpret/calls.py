"""Calls: resolve a call to a canonical op, a local function/class/module, and compute its result."""

from __future__ import annotations

import re
from dataclasses import replace

import libcst as cst

from torchlint.static.facts import ops, semantics
from torchlint.static.facts.arith import arith, cosine, gram, gram_diag, same_tensor
from torchlint.static.facts.ranges import INF
from torchlint.static.facts.semantics import apply_op
from torchlint.static.facts.values import (
    DEGENERATE,
    FILLED_WITH_INF,
    GENERATOR_CLASSES,
    NOTHING,
    RngOrigin,
    Value,
    constant,
    held_rng,
    join,
    tracked_of,
)
from torchlint.static.interpret import batches, guards, shape_params, shaping, special_calls
from torchlint.static.interpret.autocast import autocast_dtype
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.expressions import STRINGS, TO_TEXT
from torchlint.static.interpret.frames import module_qual, params_of, positional_names
from torchlint.static.interpret.scopes import Body

NUMPY = "numpy"  # the qual of a value that is a numpy array or scalar
NUMPY_SCALARS = frozenset({"numpy.float64", "numpy.float32", "numpy.float16", "numpy.int64", "numpy.int32"})
MAX_LIST_ITEMS = 8
# `transformers` classes whose from_pretrained() builds a model (AutoModelForCausalLM, BertModel,
# GPT2LMHeadModel, T5ForConditionalGeneration), not a tokenizer, config or processor
HF_MODEL_CLASS = re.compile(r"Model|For[A-Z]")
HF_NOT_MODEL = re.compile(r"Tokenizer|Config|Processor|Extractor|ImageProcessor")


# calls that hand back an object that already exists (a parameter keeps its history under no_grad)
_EXISTING = frozenset({"get", "pop", "next", "getattr", "setdefault", "parameters", "named_parameters", "values",
                       "items", "keys", "state_dict", "to", "cuda", "cpu", "__getitem__", "iter"})
_MADE_WITHOUT_GRAD = Value(tracked=False)


class Calls:
    """The call half of the interpreter (mixed into Walker)."""

    def _call(self, node: cst.Call) -> Value:
        info = CallInfo(node)
        info.scope = self.scope
        self.ctx.calls[id(node)] = info
        self.events.append((0, info))
        self.logs[-1].entries.append(info)
        self.ctx.timeline.append(info)
        func = node.func
        ctx = self.ctx
        qual = ctx.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        receiver_value = NOTHING
        if qual is not None:
            info.form = "function"
            info.qual = qual
            info.op = ops.FUNCTION_OPS.get(qual)
        elif isinstance(func, cst.Attribute):
            receiver_value = self.expr(func.value)
            attr = func.attr.value
            owner_attr = None
            if receiver_value.kind == "instance" and receiver_value.cls is not None:
                owner_attr = receiver_value.cls.find("attrs", attr) or receiver_value.cls.find("methods", attr)
            if owner_attr is not None:
                info.form = "local"
                info.callee = owner_attr
            elif receiver_value.kind in ("instance", "module", "either") and attr in ("forward", "__call__"):
                info.form = "local"
                info.callee = receiver_value
            else:
                info.form = "method"
                info.receiver = func.value
                info.op = ops.METHOD_OPS.get(attr)
                info.qual = attr
        else:
            info.callee = self.expr(func)
            info.form = "local"

        values = []
        keywords: dict[str, Value] = {}
        star = False
        passed: list[Value] = []  # positional values with `*known_tuple` expanded: what the callee gets
        sizes: dict[str, object] = {}  # what each argument names as a size (`args.dim`), by parameter
        for arg in node.args:
            value = self.expr(arg.value)
            if arg.keyword is not None:
                info.kwargs[arg.keyword.value] = arg.value
                keywords[arg.keyword.value] = value
            elif not arg.star:
                info.args.append(arg.value)
                values.append(value)
                passed.append(value)
                sizes[len(passed) - 1] = arg.value
            elif arg.star == "*" and value.kind == "list" and value.items and not star:
                passed.extend(value.items)  # `f(*make(), y)`: the items of a known tuple, in order
            elif arg.star == "**" and value.kind == "dict" and value.items and all(value.keys) \
                    and len(value.keys) == len(value.items):
                keywords.update(zip(value.keys, value.items, strict=True))  # `model(**batch)`: a dict of known keys
            else:
                star = True
        if (isinstance(func, cst.Name) and func.value in TO_TEXT and not info.callee.kind) or \
                (info.qual == "format" and isinstance(func, cst.Attribute) and isinstance(func.value, STRINGS)):
            for arg in node.args:
                self.as_text(arg.value)
        if info.form == "local" and ctx.call_sites is not None:
            ctx.call_sites.record(info.callee, isinstance(func, cst.Attribute), passed, keywords, star,
                                  self.scope.no_grad, self.fp16 > 0)
        elif info.form == "method" and ctx.call_sites is not None and info.qual in batches.FED_STEPS:
            for step, batch in batches.fed_batches(info.qual, values, keywords):  # `trainer.fit(model, loader)`
                ctx.call_sites.record(step, True, [batch, NOTHING], {}, False)
        elif info.form == "method" and ctx.call_sites is not None and info.op is None:
            ctx.call_sites.by_name(info.name, self.scope.no_grad, self.fp16 > 0)  # `unit.load_from(w)`

        if info.qual in ops.FEATURE_CALLS or _is_layer(info.callee):
            _mark_features(ctx, values)
        if info.op == "where":
            _claim_where_guarded(ctx, node)
        if info.form == "method" and info.op in ops.NULLARY_METHODS and info.args:
            info.op = None  # `logger.log("loss", v)` is not a tensor log
        if info.form == "local" and info.callee.kind == "module":
            info.op = ops.MODULE_OPS.get(info.callee.qual or "")
            if info.op is not None:
                info.form = "module"
        result = self._call_result(info, receiver_value, values)
        if info.form in ("method", "function"):
            result = shaping.shaped(ctx, info, receiver_value, values, result)
        elif info.form == "local" and (result.shape is not None or result.kind == "list"):
            function = shape_params.called_function(info.callee)
            if function is not None:
                result = shape_params.specialised_value(ctx, result, function, passed, keywords, sizes, info.kwargs,
                                                        isinstance(func, cst.Attribute) or info.callee.kind == "instance")
            elif result.shape is not None and not result.kind:
                result = replace(result, shape=None)
        if _widened(info, receiver_value, values, result):
            result = replace(result, half=False, f32=True)  # `torch.cat((a16, b32))`, `b32.clamp(0)`: float32
        if len(values) >= 2 and shaping.is_elementwise_loss(info):
            shaping.elementwise(ctx, node, values[0], values[1])
        if result.kind == "instance" and info.callee.kind == "class" and result.rng is None:
            held = held_rng([*values, *keywords.values()])
            if held is not None:  # `RandomFlip(np.random.RandomState(seed))`: it draws from that generator
                result = result.but(rng=held)
        if info.form == "method" and _converts_to_half(info, receiver_value, result, values):
            # `model.half()`, `model.to(torch.float16)`: the module itself; `m.apply(to_f16)`: what the
            # function converts (its `.weight.data` of some layers) is not known to be all of it
            self.made_half(info.receiver, whole=info.name != "apply")
        elif info.form == "local" and isinstance(getattr(info.callee, "body", None), Body) and info.callee.body.halves:
            self._halving_call(info, node)
        if info.form == "method" and info.name == "append" and receiver_value.kind == "list" and len(values) == 1:
            self._appended(info.receiver, receiver_value, values[0])
        if info.form == "method":
            if isinstance(info.receiver, cst.Name):
                self._inplace(info, receiver_value, values, result)
            elif isinstance(info.receiver, cst.Attribute) and info.receiver.attr.value == "data" and \
                    ops.is_inplace(info.name):
                self._data_inplace(info, values, result)
        if result is NOTHING and self.scope.no_grad and info.name not in _EXISTING:
            result = _MADE_WITHOUT_GRAD  # `eer = brentq(...)` under no_grad: whatever it is, it has no history
        return result

    def made_half(self, target: cst.BaseExpression, whole: bool = False) -> None:
        """The module `target` (or a submodule of it) was converted to float16 in place: the model it
        belongs to now has float16 parameters, and computes in float16 when `whole` (`model.half()`);
        a parameter of the function being walked is recorded, so calling the function converts (some
        of) what its caller passes."""
        whole = whole and isinstance(target, cst.Name)
        while isinstance(target, (cst.Attribute, cst.Subscript)):
            target = target.value
        if not isinstance(target, cst.Name):
            return
        function = next((body for body in reversed(self.logs) if body.kind == "function"), None)
        if function is not None and target.value in {p.name.value for p in params_of(function.node.params)}:
            function.halves.add(target.value)
        value = self.frame.lookup(target.value)
        if value.kind in ("instance", "module", "either") and not value.half:
            self.frame.env[target.value] = value.but(half=True) if whole else value.but(half_params=True)

    def _appended(self, target: cst.BaseExpression, before: Value, item: Value) -> None:
        """`history.append(x)`, `self.losses.append(x)`: the list now also holds such an item (the
        first MAX_LIST_ITEMS kinds of item are kept: what a checkpoint saving the list holds)."""
        if len(before.items) >= MAX_LIST_ITEMS or any(item is seen for seen in before.items):
            return
        grown = before.but(items=before.items + (item,))
        if isinstance(target, cst.Name):
            self.frame.env[target.value] = grown
        elif isinstance(target, cst.Attribute):
            owner = self.ctx.value(target.value)
            if owner.kind == "instance" and owner.cls is not None:
                owner.cls.attrs[target.attr.value] = grown

    def _halving_call(self, info: CallInfo, node: cst.Call) -> None:
        """`model.convert_to_fp16()`, `to_half(model)`: a project function that converts the module
        it is given (or `self`) to float16 in place."""
        body = info.callee.body
        params = positional_names(body.node.params)
        if isinstance(node.func, cst.Attribute) and params and params[0] == "self":
            if "self" in body.halves:
                self.made_half(node.func.value)
            params = params[1:]
        for name, arg in zip(params, info.args, strict=False):
            if name in body.halves:
                self.made_half(arg)
        for name, arg in info.kwargs.items():
            if name in body.halves:
                self.made_half(arg)

    def _data_inplace(self, info: CallInfo, values: list[Value], result: Value) -> None:
        """`x.data.clamp_(lo, hi)`, `s.data.masked_fill_(...)`: an in-place change autograd does not see.
        A clamp bounds what `x` holds from here on, as `x.clamp_()` does (its history stays)."""
        owner = info.receiver.value
        guard = None
        if info.name in ("clamp_", "clamp_min_", "clip_") and isinstance(owner, cst.Name):
            before = self.frame.lookup(owner.value)
            guard = result.but(tracked=before.tracked, prob=before.prob)
            self.bind(owner, guard)
        if special_calls.softmax_mask(info, values) or special_calls.probability_guard(guard):
            return
        self.data_write(info.receiver)

    def _inplace(self, info: CallInfo, receiver: Value, values: list[Value], result: Value) -> None:
        """`d.clamp_(min=eps)`, `d.add_(eps)`, `d.masked_fill_(d == 0, 1)` change what `d` holds."""
        name = info.name
        target = info.receiver
        if name in ("clamp_", "clamp_min_", "clip_") or result.desc == FILLED_WITH_INF:
            self.bind(target, result)
        elif name == "add_" and values:
            self.bind(target, self._arith_value("Add", receiver, values[0], target, info.args[0]))
        elif name in ("masked_fill_", "index_fill_", "masked_scatter_") and info.args and \
                target.value in guards.checked_names(info.args[0]):
            self.checked([target.value])

    def _call_result(self, info: CallInfo, receiver: Value, values: list[Value]) -> Value:
        node = info.node
        form = info.form
        if form == "local" or form == "module":
            callee = info.callee
            argument = values[0] if values else NOTHING
            if callee.kind == "class":
                return Value(kind="instance", cls=callee.cls, qual=callee.qual, node=node)
            if callee.kind == "function":
                return callee.returns or NOTHING
            if callee.kind == "instance" and callee.cls is not None:
                return _instance_result(callee, node)
            if callee.kind == "either":
                results = [(option.cls, self._module_result(option, argument, node) if option.kind == "module"
                            else _instance_result(option, node)) for option in callee.items]
                joined = results[0][1]
                for _cls, result in results[1:]:
                    joined = join(joined, result)
                classes = tuple((cls, result) for cls, result in results if cls is not None)
                return joined.but(alts=classes)
            if callee.kind == "module":
                return self._module_result(callee, argument, node)
            if callee.half:  # an unknown model made float16 with .half()
                return Value(half=True, node=node)
            if isinstance(node.func, cst.Name) and node.func.value == "next" and callee is NOTHING:
                return batches.next_batch(self.ctx, node)  # `next(iter(loader))`: one batch
            if isinstance(node.func, cst.Name) and node.func.value == "open" and callee is NOTHING:
                return Value(kind="file", node=node)  # `with open(path, "wb") as f`: f writes to path
            if isinstance(node.func, cst.Name) and node.func.value == "sum" and callee is NOTHING and values \
                    and values[0].kind == "list" and any(item.tracked for item in values[0].items):
                return Value(op="add", tracked=True, node=node, desc="a sum")  # `sum(losses)`: a tensor with history
            if isinstance(node.func, cst.Name) and node.func.value in ops.PYTHON_NUMBERS:
                infinity = special_calls.infinity(node)
                if infinity is not None:
                    return constant(infinity, node)  # float("-inf"): a number the rules can read
                if node.func.value == "len" and values and values[0].shape and not values[0].kind:
                    return Value(tracked=False, node=node, dim=values[0].shape[0])  # the size of its first dim
                return Value(tracked=False, node=node)  # float(loss), int(...), len(...): plain Python numbers
            return NOTHING
        if form == "method":
            name = info.qual or ""
            if name in ("item", "tolist") and receiver.qual == NUMPY and not receiver.kind:
                return receiver.but(qual=None, tracked=False)  # Python numbers again
            if receiver.kind == "rng" and name == "manual_seed":
                return receiver  # torch.Generator().manual_seed(s) returns the generator
            if receiver.kind == "param" and name in ("detach", "clone", "detach_", "repeat", "tile",
                                                     "repeat_interleave"):
                return Value(tracked=name != "detach" and name != "detach_")  # a new tensor: no longer a leaf
            if name == "requires_grad_" and info.args and isinstance(info.args[0], cst.Name) and \
                    info.args[0].value == "False":
                return receiver.but(tracked=False)  # a frozen module / tensor: its parameters need no grad
            if name in ops.DETACHING_METHODS and not receiver.kind:
                # the same values without history; the node stays, so `x - x.detach().min()` is one x
                if receiver.node is None and receiver.of is None:  # an unknown x: remember which one
                    return receiver.but(tracked=False, of=receiver)
                return receiver.but(tracked=False)
            if name in ops.COPY_METHODS and receiver.op is not None and not receiver.kind:
                return receiver.but(node=info.node)  # same values, a different tensor
            if name == "chunk" and not receiver.kind and receiver is not NOTHING and info.args and \
                    isinstance(info.args[0], cst.Integer) and 1 < int(info.args[0].value) <= 16:
                # `s, t = h.chunk(2, dim=1)`: pieces of h, each its own tensor (`s - t` is no `h - h`)
                return Value(kind="list", node=node, items=tuple(
                    Value(tracked=receiver.tracked, half=receiver.half) for _ in range(int(info.args[0].value))))
            if name in ("masked_fill", "masked_fill_") and not receiver.kind:
                fill = values[1] if len(values) > 1 else self.ctx.value(info.kwargs.get("value"))
                if fill.op == "const" and fill.const == INF:  # `-float('-inf')`: +inf, not -inf
                    return receiver.but(desc=FILLED_WITH_INF, node=node)
            if name in ops.TRANSPARENT_METHODS:
                return receiver
            if name in ops.HALF_METHODS:
                return semantics.to_half(receiver)
            if name in ops.UPCAST_METHODS:
                return receiver.but(half=False, f64=name == "double", f32=True)
            if name in ("to", "type"):
                return self._cast(info, receiver)
            if name == "astype" and receiver.op == "mask":
                return receiver.but(node=info.node)  # a NumPy boolean array as 0/1 numbers
            if name in ("parameters", "named_parameters"):
                return Value(kind="params")
            if name in ("parse_args", "parse_known_args") and receiver.kind in (None, "argparser"):
                options = Value(kind="namespace", qual="argparse.Namespace", node=node)
                return options if name == "parse_args" else Value(kind="list", items=(options, NOTHING), node=node)
            if name in ("diagonal", "diag") and (norms := gram_diag(receiver, node)) is not None:
                return norms
            if name in ("diagonal", "diag", "nan_to_num") and receiver.op == "cosine":
                return receiver.but(node=node)  # some of the cosines (NaN ones set to a number in [-1, 1])
            if info.op is None:
                if name in ops.HISTORY_METHODS and receiver.tracked and not receiver.kind:
                    return Value(tracked=True, half=receiver.half, node=node)  # `sigma.det()` of a prediction
                return NOTHING
            result = self._op_result(info, receiver, values)
            return result.but(qual=NUMPY) if receiver.qual == NUMPY and not result.kind else result  # `arr.mean()`
        # function form
        qual = info.qual or ""
        grad = info.kwargs.get("requires_grad")
        if isinstance(grad, cst.Name) and grad.value == "True" and qual.startswith("torch."):
            return Value(kind="param", qual="leaf", tracked=True, node=node)
        if qual in ("copy.deepcopy", "copy.copy") and values and values[0].kind in ("instance", "either", "module"):
            return values[0]  # a copy of the model: the same class, the same forward
        if qual in GENERATOR_CLASSES:
            where = self.ctx.enclosing[-1] if self.ctx.enclosing else None
            return Value(kind="rng", node=node, rng=RngOrigin(node, where, self.ctx.path))
        if info.op is not None:
            operand = values[0] if values else NOTHING
            result = self._op_result(info, operand, values[1:])
            if qual.startswith(ops.UNTRACKED_PREFIXES) and not result.kind and result.tracked is not False:
                result = result.but(tracked=False)  # numpy / math: no autograd history
            if qual.startswith("numpy.") and not result.kind:
                result = result.but(qual=NUMPY)  # a numpy array or scalar, not a Python number
            return result
        if qual in NUMPY_SCALARS:
            return Value(tracked=False, qual=NUMPY, node=node)
        if qual in ops.FACTORIES:
            return Value(tracked=False, node=node)  # a new tensor: no autograd history
        if qual in ("torch.meshgrid", "torch.broadcast_tensors") and values and all(v.tracked is False for v in values):
            # grids of untracked coordinates (`yy, xx = torch.meshgrid(arange(h), arange(w))`): untracked too
            return Value(kind="list", items=tuple(Value(tracked=False, node=node) for _ in values), node=node)
        if qual == "torch.autograd.grad":
            create = info.kwargs.get("create_graph")
            if create is None or (isinstance(create, cst.Name) and create.value == "False"):
                return Value(tracked=False, node=node)  # gradients without a graph of their own
            if isinstance(create, cst.Name) and create.value == "True":
                return Value(tracked=True, node=node)
        if qual in ("torch.diagonal", "torch.diag") and values and (norms := gram_diag(values[0], node)) is not None:
            return norms
        if qual.startswith("torch.") and qual[6:] in ops.HISTORY_METHODS and values and values[0].tracked \
                and not values[0].kind:
            return Value(tracked=True, half=values[0].half, node=node)  # `torch.diag_embed(wh)` of a prediction
        if qual == "torch.nn.Parameter":
            frozen = info.param(1, "requires_grad")
            # a tensor of its own (a learned scale, temperature or token), not a layer's weight
            return Value(kind="param", qual="standalone",
                         tracked=not (isinstance(frozen, cst.Name) and frozen.value == "False"))
        if qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1][:1].isupper() and not qual.startswith("torch.nn.init"):
            return Value(kind="module", qual=module_qual(qual), items=tuple(values), node=node)
        if qual in ("argparse.Namespace", "argparse.ArgumentParser"):
            return Value(kind="namespace" if qual == "argparse.Namespace" else "argparser", qual=qual, node=node)
        last = qual.rsplit(".", 1)[-1]
        if last == "from_pretrained":
            dtype = info.kwargs.get("torch_dtype") or info.kwargs.get("dtype")
            if dtype is not None and self.ctx.value(dtype).kind == "dtype" and self.ctx.value(dtype).half:
                return Value(half=True, tracked=True, node=node, desc="a model loaded in float16")
            owner = qual.rsplit(".", 1)[0]
            if qual.startswith("transformers.") and HF_MODEL_CLASS.search(owner.rsplit(".", 1)[-1]) \
                    and not HF_NOT_MODEL.search(owner):
                return Value(kind="module", qual=owner, node=node)  # a Hugging Face model
            return NOTHING
        if qual.startswith("torch.optim.lr_scheduler."):
            return Value(kind="scheduler", qual=qual, node=node)
        if qual.startswith("torch.optim.") and last[:1].isupper():
            return Value(kind="optimizer", qual=qual, node=node)
        if last == "GradScaler" and qual.startswith("torch."):
            return Value(kind="scaler", qual=qual, node=node)
        if qual in ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"):
            workers = self.ctx.value(info.kwargs.get("num_workers"))
            count = int(workers.const) if workers.op == "const" and workers.const is not None else (
                0 if "num_workers" not in info.kwargs else None)
            return Value(kind="dataloader", qual=qual, node=node, workers=count)
        return NOTHING

    def _module_result(self, module: Value, argument: Value, node) -> Value:
        result = self._module_value(module, argument, node)
        if result.kind or ops.MODULE_OPS.get(module.qual or "") == "sequential":
            return result  # a sequence's shape is its last layer's
        shape = shaping.module_shape(module, argument)
        return result if shape == result.shape else replace(result, shape=shape)

    def _module_value(self, module: Value, argument: Value, node) -> Value:
        op = ops.MODULE_OPS.get(module.qual or "")
        if op == "sequential":
            result = argument
            for layer in module.items:
                if layer.kind == "module":
                    result = self._module_result(layer, result, node)
                elif layer.kind == "instance" and layer.cls is not None:
                    result = layer.cls.call_result()
                else:
                    result = NOTHING
            return result
        if op == "identity":
            return argument
        if op == "linear":
            return Value(op="matmul", unbounded=True, half=module.half or argument.half or self.fp16 > 0,
                         desc=ops.LINEAR_OUTPUT, tracked=True, node=node)
        if op in ("sigmoid", "softmax", "log_softmax", "relu", "softplus", "tanh"):
            return apply_op(op, argument, node, [])
        if op in ops.LOSS_OPS or (module.qual or "").endswith("Loss"):
            return Value(op="loss", desc="a loss", tracked=argument.tracked, node=node)
        return Value(tracked=True, half=module.half, node=node)

    def _cast(self, info: CallInfo, receiver: Value) -> Value:
        for arg in list(info.args) + list(info.kwargs.values()):
            qual = self.ctx.qualify(arg)
            if qual in ops.FLOAT16_NAMES:
                return semantics.to_half(receiver)
            if qual in ops.UPCAST_DTYPES:
                return receiver.but(half=False, f64=qual in ops.FLOAT64_NAMES, f32=True)
        return receiver

    def _op_result(self, info: CallInfo, operand: Value, rest: list[Value]) -> Value:
        op = info.op
        node = info.node
        if op in ("clamp", "clamp_min"):
            low = info.param(1, "min")
            high = info.param(2, "max") if op == "clamp" else None
            if low is None and high is None:
                return operand.but(node=node) if not operand.kind else NOTHING
            return semantics.clamp(operand, self.ctx.value(low) if low is not None else None,
                                   self.ctx.value(high) if high is not None else None, node)
        if op in ("max", "min", "maximum", "minimum"):
            second = info.param(1, "other")
            second_value = self.ctx.value(second)
            if op in ("maximum", "minimum") or (second is not None and "dim" not in info.kwargs
                                                  and not isinstance(second, cst.Integer)):
                return semantics.extremum(op, operand, second_value, node)
            return Value(op=op, lo=operand.lo, hi=operand.hi, zero=min(operand.zero, DEGENERATE), of=operand,
                         half=operand.half, tracked=operand.tracked, node=node)
        if op == "pow":
            exponent = self.ctx.value(info.param(1, "exponent"))
            return arith("Power", operand, exponent, info.operand, None, node, self.fp16 > 0)
        if op in ("matmul", "einsum"):
            half = operand.half or any(v.half for v in rest) or self.fp16 > 0
            if op == "matmul" and operand.op == "normalize" and rest and rest[0].op == "normalize":
                return cosine(node, half, tracked_of(operand, *rest),  # unit rows times unit rows
                              of=operand if same_tensor(operand, rest[0]) else None)
            if op == "matmul" and rest and same_tensor(operand, rest[0]) and operand is not NOTHING:
                return gram(operand, node, half)
            return Value(op="matmul", unbounded=True, half=half, desc="a matmul output",
                         tracked=tracked_of(operand, *rest), node=node)
        if op == "tensor":
            dtype = self.ctx.qualify(info.kwargs["dtype"]) if "dtype" in info.kwargs else None
            result = operand.but(kind=None, items=(), node=node, op=operand.op if operand.op != "const" else "tensor",
                                 qual=None)
            if operand.kind == "list":
                result = semantics.literal_array(operand.items, node)
            if dtype in ops.FLOAT16_NAMES:
                result = result.but(half=True)
            return result
        if op in ("softmax", "log_softmax") and "dtype" in info.kwargs:
            dtype = self.ctx.qualify(info.kwargs["dtype"])
            if dtype in ops.UPCAST_DTYPES:
                operand = operand.but(half=False, f64=dtype in ops.FLOAT64_NAMES)
        if op == "uniform":
            return special_calls.uniform(self.ctx, info, node)
        if op == "rand" and info.name == "rand" and all(isinstance(a, (cst.Integer, cst.Tuple)) for a in info.args):
            return Value(op="rand", lo=0.0, hi=1.0, tracked=False, node=node)  # a few samples: 0 is ~1e-7 likely
        if op == "divide":
            divisor = rest[0] if rest else NOTHING
            return self._arith_value("Divide", operand, divisor, info.operand, info.param(1, "other"), node)
        result = apply_op(op, operand, node, rest)
        if self.fp16 > 0 and op in ops.AUTOCAST_FLOAT32 and not result.kind:
            return result.but(half=False, f32=True, shape=result.shape, dim=result.dim)  # autocast's float32 list
        return result

    def _arith_value(self, op, left: Value, right: Value, left_node, right_node, node=None) -> Value:
        return arith(op, left, right, left_node, right_node, node, self.fp16 > 0)

    def _is_fp16_autocast(self, call: cst.Call) -> bool:
        return autocast_dtype(self.ctx, call) == "float16"


_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack"})
_NOT_FLOAT = frozenset({"const", "mask", "count", "argmax", "argmin"})  # results that do not promote a float16


def _widened(info: CallInfo, receiver: Value, values: list[Value], result: Value) -> bool:
    """A tensor op with a float32 input (the receiver, an argument, an item of a joined list) and
    no float16 one gives a float32 tensor: PyTorch promotes to the widest floating type (a float16
    input may meet a 0-dim float32 one, which does not promote it)."""
    if result.kind or result.f32 or result.op in _NOT_FLOAT:
        return False
    if info.qual in _JOINS and values and values[0].kind == "list":
        return any(v.f32 for v in values[0].items)  # every item has the same number of dims
    inputs = [receiver, *values]
    return info.op is not None and any(v.f32 for v in inputs) and not any(v.half for v in inputs)


def _converts_to_half(info: CallInfo, receiver: Value, result: Value, values: list[Value]) -> bool:
    """`m.half()` / `m.to(torch.float16)` on a module (in place, unlike a tensor's), or `m.apply(f)`
    with a function that converts the module it is given."""
    if info.receiver is None:
        return False
    if info.name == "apply" and values:
        body = values[0].body
        params = params_of(body.node.params) if isinstance(body, Body) else []
        return bool(params) and params[0].name.value in body.halves
    if receiver.kind not in ("instance", "module", "either") or receiver.half:
        return False
    return info.name in ops.HALF_METHODS or (info.name == "to" and result.half)


def _instance_result(callee: Value, node) -> Value:
    """What calling an instance of a project class returns (its forward / __call__)."""
    result = callee.cls.call_result()
    if not result.kind and result.tracked is None and callee.cls.is_module:
        result = result.but(tracked=True, node=result.node or node, shape=result.shape)  # a module's output
    return semantics.to_half(result) if callee.half and not result.kind else result


def _is_layer(callee: Value) -> bool:
    """A module called on its inputs: a torch.nn layer (not a loss) or a module class of the file."""
    if callee.kind == "module":
        qual = callee.qual or ""
        return ops.MODULE_OPS.get(qual) not in ops.LOSS_OPS and not qual.endswith("Loss")
    return callee.kind == "instance" and callee.cls is not None and callee.cls.is_module


def _mark_features(ctx: FileContext, values: list[Value]) -> None:
    for value in values:
        for item in value.items if value.kind == "list" else (value,):
            if item.node is not None and not item.kind:
                ctx.features.add(id(item.node))


def _claim_where_guarded(ctx: FileContext, call: cst.Call) -> None:
    """`where(d == 0, fallback, x / d)` (or a mask computed earlier from d) handles the zero itself:
    its division/log/sqrt of d is not reported."""
    if not call.args:
        return
    condition = call.args[0].value
    guarded = set(ctx.value(condition).checks)
    if isinstance(condition, cst.Comparison):
        guarded.add(ctx.shape(condition.left))
        guarded.update(ctx.shape(target.comparator) for target in condition.comparisons)
    if not guarded:
        return
    stack = [arg.value for arg in call.args[1:]]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Divide) and ctx.shape(node.right) in guarded:
                ctx.claim(node)
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.Call):
            inner = [arg.value for arg in node.args]
            if isinstance(node.func, cst.Attribute):
                inner.append(node.func.value)
            if any(ctx.shape(arg) in guarded for arg in inner):
                ctx.claim(node)
            stack.extend(inner)
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
