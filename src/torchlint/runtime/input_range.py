"""TL912: images fed to a model as raw pixel values (whole numbers 0-255), not normalised.

Checked once per run, at the first convolution over images (Conv2d, Conv3d) of the first training
forward pass: one reduction of its input (min, max, whether every value is a whole number) and one
read. A model that normalises its input itself (`x / 255` before its first convolution) passes,
since the convolution sees the normalised values; binary images (0/1) and depth maps in millimetres
(past 255) are not raw pixels.
"""

from __future__ import annotations

import torch

from torchlint.runtime.catalog import RAW_PIXELS
from torchlint.runtime.records import Event

IMAGE_CONVS = (torch.nn.Conv2d, torch.nn.Conv3d)


def is_image_conv(module) -> bool:
    return isinstance(module, IMAGE_CONVS)


def raw_pixels_event(module, args: tuple, root, step: int) -> Event | None:
    """The event when the convolution's input holds whole numbers from 0 to (at most) 255."""
    x = args[0] if args else None
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
        return None
    with torch.no_grad():
        low, high, whole = torch.stack([x.min().float(), x.max().float(),
                                        torch.eq(x, x.round()).all().float()]).tolist()
    if not (whole and low >= 0 and 2 < high <= 255):
        return None
    name = next((n for n, m in root.named_modules() if m is module), None) or type(module).__name__
    return Event(RAW_PIXELS.code, RAW_PIXELS.name, step,
                 f"step {step}: the input of `{name}` ({type(module).__name__}) holds whole numbers from {low:.0f} to "
                 f"{high:.0f}: raw pixel values, not normalised. Divide by 255 (torchvision's ToTensor does) and "
                 "normalise with the dataset's mean and std: weights initialised for inputs of unit scale see "
                 "activations and gradients ~100x too large", module=name)
