"""TL510 seed-from-string-hash: a seed computed with `hash()` of a string, salted per process."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.string_hash_seeds import string_hash_seeds
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl502_conflicting_determinism import env_names


class SeedFromStringHash(Rule):
    info = RuleInfo(
        "TL510", "seed-from-string-hash", "warning",
        "A seed computed with hash() of a string: str hashes are salted per process, so the seed (and "
        "the data, splits or initialisation it drives) differs in every run.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        if "PYTHONHASHSEED" in env_names(ctx):
            return  # it sets the hash seed itself, too late: TL503 reports that
        for found in string_hash_seeds(ctx):
            ctx.report(
                self.info, found.hashed,
                f"`{ctx.code(found.hashed, 50)}` hashes a string, and Python salts `str` hashes in every "
                f"process (PYTHONHASHSEED), so the seed given to `{ctx.code(found.seeding, 40)}` differs between "
                "runs of the same command. Use a stable hash, `zlib.crc32(name.encode())` or `hashlib`",
                related=((found.seeding, "the generator it seeds"),),
            )
