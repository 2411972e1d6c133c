"""Rules only the graph depth can check (the catalog lists them without importing torch)."""

from torchlint.rule import RuleInfo

SHAPE_MISMATCH = RuleInfo(
    "TL601", "shape-mismatch", "error",
    "A layer receives a tensor whose shape it cannot take (found by tracing with symbolic shapes).",
    tags=("shapes", "graph"), precision="very-high",
)
SHAPE_SPECIALIZATION = RuleInfo(
    "TL602", "shape-specialization", "warning",
    "The model only works for one value of a symbolic dimension (e.g. a batch size baked into a reshape).",
    tags=("shapes", "graph"), precision="high",
)
GRAPH_RULES = (SHAPE_MISMATCH, SHAPE_SPECIALIZATION)
