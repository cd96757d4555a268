"""Parse a plain-text ledger into entries."""

from dataclasses import dataclass


@dataclass
class Entry:
    date: str
    account: str
    amount_cents: int
    currency: str


def parse_line(line: str) -> Entry:
    date, account, amount, currency = line.split()
    return Entry(date, account, round(float(amount) * 100), currency)


def parse(text: str) -> list[Entry]:
    return [parse_line(l) for l in text.splitlines() if l.strip() and not l.startswith("#")]
