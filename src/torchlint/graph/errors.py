"""Errors of the graph depth, and their one-line descriptions."""


class TraceInputError(Exception):
    """A bad target, input spec or model: reported as one line, exit 2."""


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if text.startswith(type(error).__name__) else f"{type(error).__name__}: {text}"


def with_root_cause(error: BaseException) -> str:
    """The error in one line and, when it chains others, the innermost one: a lazy loader's
    'Could not import module ...' otherwise hides the real failure (a broken dependency)."""
    root, seen = error, set()
    while id(root) not in seen and (root.__cause__ or root.__context__) is not None:
        seen.add(id(root))
        root = root.__cause__ or root.__context__
    if root is error:
        return one_line(error)
    return f"{one_line(error)} (root cause: {one_line(root)})"


def clip_words(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters at a word boundary (never mid-word), with '…' when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > 0 else limit].rstrip(" ,;:") + " …"
