"""Source positions: where a model node came from in the plan text."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """1-based line/column of the first character, and of the character after the last one."""

    line: int
    column: int
    end_line: int
    end_column: int
    start_pos: int = 0  # character offsets into the plan text, end exclusive
    end_pos: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "line": self.line,
            "column": self.column,
            "endLine": self.end_line,
            "endColumn": self.end_column,
        }


NO_SPAN = Span(0, 0, 0, 0)
