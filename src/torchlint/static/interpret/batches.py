"""What a DataLoader's batches are made of: the samples of its dataset with the batch dim in front,
for a for loop over the loader and for the steps of a Lightning module fed by its own loaders."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.static.facts import shapes
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.interpret.context import FileContext


def sample_of(dataset: Value) -> Value:
    """What indexing a dataset gives: a TensorDataset's rows, a Dataset class's `__getitem__` return."""
    if dataset.kind == "dataset":
        return Value(kind="list", items=tuple(
            Value(shape=item.shape[1:]) if item.shape else NOTHING for item in dataset.items))
    if dataset.kind == "instance" and dataset.cls is not None:
        method = dataset.cls.methods.get("__getitem__")
        if method is not None and method.returns is not None:
            return method.returns
    return NOTHING


def batched(sample: Value, dim: shapes.Dim = shapes.BATCH) -> Value:
    """A DataLoader's batch of `sample`s (default collation): each tensor gains the batch dim."""
    if sample.kind == "list":
        return Value(kind="list", items=tuple(batched(item, dim) for item in sample.items))
    if sample.kind == "dict":
        return Value(kind="dict", items=tuple(batched(item, dim) for item in sample.items), keys=sample.keys)
    if sample.kind:
        return NOTHING
    if sample.shape is None:
        return sample  # stacking keeps what is known of the values (a mask, a count)
    return replace(sample, shape=sample.shape if dim == shapes.UNBATCHED else (dim, *sample.shape))


def collated(collate: Value) -> Value:
    """What the program's own `collate_fn` returns: a function of the file's, or an instance of a
    class with `__call__` (NOTHING for anything else: a lambda, a `partial`, a library collator)."""
    if collate.kind == "instance" and collate.cls is not None:
        collate = collate.cls.methods.get("__call__") or NOTHING
    if collate.kind != "function" or collate.returns is None:
        return NOTHING
    return collate.returns


def loader_batch(loader: Value) -> Value:
    """A batch of a DataLoader whose dataset or collate function is known (NOTHING otherwise)."""
    if loader.kind != "dataloader" or not loader.items:
        return NOTHING
    if len(loader.items) > 2:
        return collated(loader.items[2])
    dim = loader.items[1].dim if len(loader.items) > 1 else shapes.BATCH
    return batched(sample_of(loader.items[0]), dim)


# calls that iterate the loader given first as it is (progress bars), or number its batches
LOADER_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "track", "progress_bar"})


def batch_of(ctx: FileContext, iterated: cst.BaseExpression, iterable: Value) -> Value:
    """The item a for loop gets: a batch of a DataLoader whose dataset is known, also through a
    wrapper given the loader first (`tqdm(loader)`, `iter(loader)`) and `enumerate(...)` (an index
    and the batch)."""
    if iterable.kind == "dataloader":
        return loader_batch(iterable)
    if not isinstance(iterated, cst.Call) or not iterated.args or iterated.args[0].keyword is not None:
        return NOTHING
    name = iterated.func.value if isinstance(iterated.func, cst.Name) else \
        iterated.func.attr.value if isinstance(iterated.func, cst.Attribute) else ""
    if name not in LOADER_WRAPPERS:
        return NOTHING
    inner = iterated.args[0].value
    batch = batch_of(ctx, inner, ctx.value(inner))
    if name == "enumerate" and batch is not NOTHING:
        return Value(kind="list", items=(Value(tracked=False), batch))
    return batch if name != "enumerate" else NOTHING


def next_batch(ctx: FileContext, call: cst.Call) -> Value:
    """`next(iter(loader))`: one batch."""
    if not isinstance(call.func, cst.Name) or call.func.value != "next" or len(call.args) != 1:
        return NOTHING
    inner = call.args[0].value
    if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "iter" and inner.args:
        inner = inner.args[0].value
    return loader_batch(ctx.value(inner))


# `trainer.fit(model, train_loader, val_loader)` and its siblings: which step each loader feeds, by
# its position after the model, its keyword and the data module's (or the module's own) loader method
FED_STEPS = {
    "fit": (("training_step", 1, "train_dataloaders", "train_dataloader"),
            ("validation_step", 2, "val_dataloaders", "val_dataloader")),
    "validate": (("validation_step", 1, "dataloaders", "val_dataloader"),),
    "test": (("test_step", 1, "dataloaders", "test_dataloader"),),
    "predict": (("predict_step", 1, "dataloaders", "predict_dataloader"),),
}

# a Lightning module's steps and the loader method whose batches each receives
TRAINER_STEPS = tuple(dict.fromkeys((step, source) for plan in FED_STEPS.values() for step, _, _, source in plan))


def trainer_batches(cls) -> list[tuple[Value, Value]]:
    """(step method, batch) for a class that defines both a step and the loader it is fed from
    (`training_step(self, batch, batch_idx)` and `train_dataloader(self)`)."""
    found = []
    for step, loader in TRAINER_STEPS:
        method, source = cls.methods.get(step), cls.methods.get(loader)
        if method is None or source is None or source.returns is None:
            continue
        made = source.returns
        batch = loader_batch(made)
        if batch is not NOTHING:
            found.append((method, batch))
    return found


def fed_batches(method: str, values: list[Value], keywords: dict[str, Value]) -> list[tuple[Value, Value]]:
    """(step method, batch) for a trainer call that hands a Lightning-style module of the file's the
    loaders it trains on, directly or through a data module's loader methods."""
    plan = FED_STEPS.get(method)
    model = keywords.get("model") or (values[0] if values else NOTHING)
    if plan is None or model.kind != "instance" or model.cls is None:
        return []
    module = keywords.get("datamodule") or NOTHING
    found = []
    for step, position, keyword, source in plan:
        target = model.cls.find("methods", step)
        if target is None:
            continue
        loader = keywords.get(keyword) or (values[position] if len(values) > position else NOTHING)
        if loader is NOTHING and module.kind == "instance" and module.cls is not None:
            made = module.cls.find("methods", source)
            loader = made.returns if made is not None and made.returns is not None else NOTHING
        batch = loader_batch(loader)
        if batch is not NOTHING:
            found.append((target, batch))
    return found
