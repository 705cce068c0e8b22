"""Arithmetic for the extract graph's reader: the model copies the figures a question needs (each with the excerpt
it comes from) and writes the sum as a short Python program; the program is checked to hold nothing but numbers,
names and arithmetic, and is evaluated here, not by the model (small models copy figures well and compute badly)."""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass

from pagegraph.retrievers.statements import asks_for_metric
from pagegraph.state.answering import Evidence

MAX_LINES = 30
MAX_MAGNITUDE = 1e15

_ARITHMETIC = re.compile(
    r"\b(?:differences?|differ|gap|sum|in\s+total|total\s+of|average|"
    r"how\s+much\s+(?:higher|lower|more|less|greater|larger|smaller|bigger)|how\s+many\s+(?:more|fewer|less)|"
    r"percent(?:age)?\s+(?:change|increase|decrease|difference|gap|points?)|"
    r"(?:increase|decrease|change|grow|growth|rise|fall|drop)(?:d|s)?\s+(?:from|between|by)|"
    r"times\s+(?:as|more|higher|larger)|decimal\s+places?)\b",
    re.IGNORECASE,
)
_DECIMALS = re.compile(r"\b(\d|one|two|three|four|five|six)\s+decimal", re.IGNORECASE)
_WHOLE = re.compile(r"\b(?:int(?:eger)?\s+format|whole\s+number|nearest\s+(?:integer|whole))\b", re.IGNORECASE)
_WORD_DIGITS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_FENCE = re.compile(r"^\s*```")
_LINE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([^#]+?)\s*(?:#\s*(.*))?$")
_CITED = re.compile(r"\[(\d+)\]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d)")
_CURRENCY = re.compile(r"[$€£¥₹]")
_PERCENT = re.compile(r"(?<=[\d.])\s*%")
_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A reply of one value (small models sometimes answer so): read as `answer = value  # [n]`.
_LONE_VALUE = re.compile(r"^\s*(?:answer\s*[:=]\s*)?([-−]?[$€£¥₹]?\d[\d,]*(?:\.\d+)?\s*%?)\s*(\[\d+\])?\s*\.?\s*$")
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_FUNCTIONS = frozenset({"round", "abs", "min", "max"})


class CalculationError(ValueError):
    """A reply that is not a program of figures and arithmetic, or one whose arithmetic fails."""


@dataclass(frozen=True)
class Figure:
    """A figure the model copied: its name in the program, value, the text it wrote, what it says it is, and the
    excerpt it cites (None: cited none)."""

    name: str
    value: float
    written: str
    note: str
    excerpt: int | None
    percent: bool


@dataclass(frozen=True)
class Calculation:
    figures: tuple[Figure, ...]
    expression: str
    value: float
    percent: bool


def asks_to_compute(question: str) -> bool:
    """A question whose answer is usually computed from figures, not copied: a difference, total, average, change,
    ratio or other financial metric, or a value to round."""
    return bool(_ARITHMETIC.search(question)) or asks_for_metric(question)


def _evaluate(node: ast.AST, values: dict[str, float]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _evaluate(node.operand, values)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        if isinstance(node.op, ast.Div) and right == 0:
            raise CalculationError("division by zero")
        return _OPERATORS[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and node.args
    ):
        args = [_evaluate(arg, values) for arg in node.args]
        if node.func.id == "round":
            return float(round(args[0], int(args[1]) if len(args) > 1 else 0))
        if node.func.id == "abs":
            return abs(args[0])
        return min(args) if node.func.id == "min" else max(args)
    raise CalculationError(f"not arithmetic: {ast.unparse(node)!r}")


def _copied(node: ast.AST) -> float | None:
    """The figure a line without names copies: its first number (`45 / 100` copies 45 and scales it), else None."""
    walked = list(ast.walk(node))
    if any(isinstance(n, ast.Name) for n in walked):
        return None
    return next((float(n.value) for n in walked if isinstance(n, ast.Constant)), None)


def _constant_text(code: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", code))


class _Written(ast.NodeTransformer):
    """Rewrites each figure's name as the figure, to show the arithmetic with the numbers."""

    def __init__(self, written: dict[str, str]) -> None:
        self.written = written

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 (ast's visitor naming)
        return ast.Name(id=self.written.get(node.id, node.id), ctx=node.ctx)


def parse_calculation(reply: str) -> Calculation:
    """The figures and the result of a reply written as `name = figure  # [n] what it is` lines and a last
    `answer = expression` line. Raises CalculationError for anything else."""
    lines = [line for line in reply.strip().splitlines() if line.strip() and not _FENCE.match(line)]
    if not lines or len(lines) > MAX_LINES:
        raise CalculationError(f"no program of at most {MAX_LINES} lines")
    if len(lines) == 1 and (lone := _LONE_VALUE.match(lines[0])):
        lines = [f"answer = {lone.group(1).replace('−', '-')}  # {lone.group(2) or ''}"]
    values: dict[str, float] = {}
    figures: dict[str, Figure] = {}
    written: dict[str, str] = {}
    uses: dict[str, set[str]] = {}  # the figures each name's value is computed from
    additive: dict[str, bool] = {}  # computed with + and - only: a sum of percentages is a percentage
    shown = ""
    for line in lines:
        if line.lstrip().startswith("#") or re.match(r"^\s*print\s*\(", line):
            continue
        match = _LINE.match(line)
        if match is None:
            raise CalculationError(f"not an assignment: {line.strip()!r}")
        name, code, note = match.group(1), match.group(2), (match.group(3) or "").strip()
        percent = bool(_PERCENT.search(code))
        code = _PERCENT.sub("", _THOUSANDS.sub("", _CURRENCY.sub("", code)))
        try:
            expression = ast.parse(code, mode="eval").body
        except SyntaxError as exc:
            raise CalculationError(f"not arithmetic: {code!r}") from exc
        value = _evaluate(expression, values)
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise CalculationError(f"{name} is out of range")
        values[name] = value
        copied = _copied(expression)
        if copied is not None:
            cited = _CITED.search(note)
            label = _CITED.sub("", note).strip(" :;,-")
            figures[name] = Figure(name, copied, code.strip(), label, int(cited.group(1)) if cited else None, percent)
            shown, uses[name], additive[name] = code.strip(), {name}, True
            written[name] = shown if _constant_text(shown) else f"({shown})"
        else:
            figures.pop(name, None)
            names = [n.id for n in ast.walk(expression) if isinstance(n, ast.Name) and n.id in uses]
            shown = ast.unparse(_Written(written).visit(expression))
            written[name] = f"({shown})"
            uses[name] = set().union(*(uses[n] for n in names))
            additive[name] = all(additive[n] for n in names) and all(
                isinstance(n.op, (ast.Add, ast.Sub)) for n in ast.walk(expression) if isinstance(n, ast.BinOp)
            )
        if name == "answer":
            break
    if "answer" not in values:
        raise CalculationError("no `answer = ...` line")
    used = tuple(f for name, f in figures.items() if name in uses["answer"])
    percent = bool(used) and all(f.percent for f in used) and additive["answer"]
    return Calculation(used, shown, values["answer"], percent)


def decimals_asked(question: str) -> int | None:
    if _WHOLE.search(question):
        return 0
    match = _DECIMALS.search(question)
    if match is None:
        return None
    word = match.group(1).lower()
    return int(word) if word.isdigit() else _WORD_DIGITS[word]


def format_value(value: float, question: str) -> str:
    """The result rounded as the question asks; otherwise whole numbers whole, others to 2 decimals (4 below 1)."""
    asked = decimals_asked(question)
    if asked is not None:
        return f"{value:,.{asked}f}"
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    text = f"{value:,.{2 if abs(value) >= 1 else 4}f}".rstrip("0").rstrip(".")
    return text


def _numbers_in(text: str) -> set[float]:
    found = set()
    for match in _FIGURE.findall(text):
        try:
            found.add(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def place_figures(calculation: Calculation, evidence: list[Evidence]) -> tuple[list[int | None], float]:
    """For each figure, the excerpt that holds it (the one it cites when that does, else the first that does, else
    None), and the share of figures some excerpt holds: a figure no excerpt holds was not copied."""
    held = [_numbers_in(e.text) for e in evidence]
    placed: list[int | None] = []
    for figure in calculation.figures:
        value = abs(figure.value)
        if figure.excerpt is not None and 1 <= figure.excerpt <= len(evidence) and value in held[figure.excerpt - 1]:
            placed.append(figure.excerpt)
        else:
            placed.append(next((n for n, numbers in enumerate(held, 1) if value in numbers), None))
    if not calculation.figures:
        return placed, 0.0
    return placed, sum(p is not None for p in placed) / len(calculation.figures)


def calculation_answer(calculation: Calculation, question: str, placed: list[int | None]) -> str:
    """The answer as the user reads it: the result citing the excerpts its figures come from, then the arithmetic
    and what each figure is."""
    unit = "%" if calculation.percent else ""
    result = format_value(calculation.value, question) + unit
    cited = "".join(f"[{n}]" for n in dict.fromkeys(p for p in placed if p is not None))
    lines = [f"{result} {cited}".strip()]
    bare = len(calculation.figures) == 1 and calculation.expression == calculation.figures[0].written
    if not bare:
        lines.append(f"Computed: {calculation.expression} = {result}")
    for figure, excerpt in zip(calculation.figures, placed):
        if figure.note or not bare:
            source = f" [{excerpt}]" if excerpt is not None else " (not found in the excerpts)"
            lines.append(f"- {figure.written}{'%' if figure.percent else ''}: {figure.note or figure.name}{source}")
    return "\n".join(lines)
