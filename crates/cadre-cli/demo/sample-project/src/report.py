"""Balances per account."""

from collections import defaultdict

from convert import to_eur
from ledger import parse


def balances(text: str) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for entry in parse(text):
        totals[entry.account] += to_eur(entry.amount_cents, entry.currency)
    return dict(totals)
