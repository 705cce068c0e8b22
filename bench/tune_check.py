"""The command line of the benches that choose parameters on one question set (or one half of its documents) and
check them on another."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parse_tune_check(description: str) -> argparse.Namespace:
    """--tune INDEX QUESTIONS, --check INDEX QUESTIONS and --out FILE; exits when a question file is missing."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", nargs=2, type=Path, metavar=("INDEX", "QUESTIONS"), required=True)
    parser.add_argument("--check", nargs=2, type=Path, metavar=("INDEX", "QUESTIONS"), required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    _exit_unless_found([args.tune[1], args.check[1]])
    return args


def parse_halves(description: str) -> argparse.Namespace:
    """--index INDEX and --questions QUESTIONS (split in halves of their documents by --seed), an optional --check
    INDEX QUESTIONS and --out FILE; exits when a question file is missing."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", nargs=2, type=Path, metavar=("INDEX", "QUESTIONS"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    _exit_unless_found([args.questions] + ([args.check[1]] if args.check else []))
    return args


def _exit_unless_found(question_files: list[Path]) -> None:
    for questions in question_files:
        if not questions.exists():
            sys.exit(f"evaluation data not found: {questions} (../shared is absent)")
