"""Output shapes of nn.LSTM / GRU / RNN from their configuration, without running them."""

from __future__ import annotations

import torch


def recurrent_outputs(layer: torch.nn.RNNBase, x: torch.Tensor):
    """nn.LSTM/GRU/RNN output shapes from their configuration. Running them on fake tensors unrolls
    time steps in Python and pins batch and length to the example sizes: an artefact, not a bug."""
    if x.shape[-1] != layer.input_size:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {layer.input_size}, got {x.shape[-1]}")
    directions = 2 if layer.bidirectional else 1
    proj = getattr(layer, "proj_size", 0) or 0
    features = (proj or layer.hidden_size) * directions
    if x.dim() == 2:  # unbatched: (T, input_size)
        output = x.new_empty((x.shape[0], features))
        state_shape = (layer.num_layers * directions, proj or layer.hidden_size)
        cell_shape = (layer.num_layers * directions, layer.hidden_size)
    else:
        batch = x.shape[0] if layer.batch_first else x.shape[1]
        output = x.new_empty((*x.shape[:2], features))
        state_shape = (layer.num_layers * directions, batch, proj or layer.hidden_size)
        cell_shape = (layer.num_layers * directions, batch, layer.hidden_size)
    hidden = x.new_empty(state_shape)
    if isinstance(layer, torch.nn.LSTM):
        return output, (hidden, x.new_empty(cell_shape))
    return output, hidden
