"""`from torchlint.integrations.pytorch_lightning import TorchlintCallback` for `import pytorch_lightning`."""

from pytorch_lightning import Callback

from torchlint.integrations.lightning_callback import make_callback

TorchlintCallback = make_callback(Callback, "pytorch_lightning")
