"""The one finding type every depth (static, graph, runtime) emits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions; end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: str  # "safe" | "unsafe"
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Related:
    """The other end of a finding: where the value it is about was made (the sigmoid, the store)."""

    path: str
    line: int
    column: int
    message: str


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: str
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    help: str = ""
    fix: Fix | None = None
    depths: tuple[str, ...] = ("static",)
    # Notebooks: the 1-based cell (line and column are then within the cell, and so are the fix's
    # edits) and the same span as (line, column, end line, end column) of the raw .ipynb text.
    cell: int | None = None
    notebook_span: tuple[int, int, int, int] | None = None
    related: tuple[Related, ...] = ()

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def file_span(self) -> tuple[int, int, int, int]:
        """Where the finding lies in the file as stored (the raw .ipynb text for a notebook)."""
        return self.notebook_span or (self.line, self.column, self.end_line, self.end_column)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["depths"] = list(self.depths)
        if self.fix is not None:
            data["fix"]["edits"] = [asdict(e) for e in self.fix.edits]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        data = dict(data)
        fix = data.pop("fix", None)
        if fix is not None:
            fix = Fix(fix["message"], fix["applicability"], tuple(Edit(**e) for e in fix["edits"]))
        data["depths"] = tuple(data.get("depths", ("static",)))
        data["related"] = tuple(Related(**r) for r in data.get("related", ()))
        if data.get("notebook_span") is not None:
            data["notebook_span"] = tuple(data["notebook_span"])
        return cls(fix=fix, **data)

    def with_path(self, path: str) -> Finding:
        return replace(self, path=path)


@dataclass
class FileResult:
    """The findings of one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None  # why the file was not checked (over max-file-size), shown as a note
