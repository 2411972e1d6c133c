"""`from torchlint.integrations.lightning import TorchlintCallback` for `import lightning` (Lightning 2.x).

    trainer = L.Trainer(callbacks=[TorchlintCallback()])
"""

from lightning.pytorch import Callback

from torchlint.integrations.lightning_callback import make_callback

TorchlintCallback = make_callback(Callback, "lightning")
