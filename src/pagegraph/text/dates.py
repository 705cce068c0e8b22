"""Months by name, in English: the words dates are written with ("December 31, 2022", "31 Dec 2022")."""

from __future__ import annotations

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
# a month as written in a date, longest name first ("September" before "Sep"), with its abbreviation's dot
MONTH_NAME = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
