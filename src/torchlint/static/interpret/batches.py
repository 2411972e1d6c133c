"""What a DataLoader's batches are made of: the samples of its dataset with the batch dim in front,
for a for loop over the loader and for the steps of a Lightning module fed by its own loaders."""

from __future__ import annotations

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


def batched(sample: Value) -> Value:
    """A DataLoader's batch of `sample`s (default collation): each tensor gains the batch dim."""
    if sample.kind == "list":
        return Value(kind="list", items=tuple(batched(item) for item in sample.items))
    if sample.kind == "dict":
        return Value(kind="dict", items=tuple(batched(item) for item in sample.items), keys=sample.keys)
    if sample.kind or sample.shape is None:
        return NOTHING
    return Value(shape=(shapes.BATCH, *sample.shape))


def batch_of(ctx: FileContext, iterated: cst.BaseExpression, iterable: Value) -> Value:
    """The item a for loop gets: a batch of a DataLoader whose dataset is known, also through
    `enumerate(loader)` (an index and the batch)."""
    if iterable.kind == "dataloader" and iterable.items:
        return batched(sample_of(iterable.items[0]))
    if isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Name) and iterated.func.value == "enumerate" \
            and iterated.args:
        inner = ctx.value(iterated.args[0].value)
        if inner.kind == "dataloader" and inner.items:
            return Value(kind="list", items=(Value(tracked=False), batched(sample_of(inner.items[0]))))
    return NOTHING


# a Lightning module's steps and the loader method whose batches each receives
TRAINER_STEPS = (("training_step", "train_dataloader"), ("validation_step", "val_dataloader"),
                 ("test_step", "test_dataloader"), ("predict_step", "predict_dataloader"))


def trainer_batches(cls) -> list[tuple[Value, Value]]:
    """(step method, batch) for a class that defines both a step and the loader it is fed from
    (`training_step(self, batch, batch_idx)` and `train_dataloader(self)`)."""
    found = []
    for step, loader in TRAINER_STEPS:
        method, source = cls.methods.get(step), cls.methods.get(loader)
        if method is None or source is None or source.returns is None:
            continue
        made = source.returns
        if made.kind == "dataloader" and made.items:
            batch = batched(sample_of(made.items[0]))
            if batch is not NOTHING:
                found.append((method, batch))
    return found
