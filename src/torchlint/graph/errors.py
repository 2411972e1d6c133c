"""A user-facing failure of `torchlint trace`: one line, exit code 2."""


class TraceInputError(Exception):
    """Bad target, constructor, input spec, or a model that cannot be traced."""
