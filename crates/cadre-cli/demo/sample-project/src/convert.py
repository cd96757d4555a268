"""Currency conversion with a fixed rate table."""

RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


def to_eur(amount_cents: int, currency: str) -> int:
    # TODO: unknown currencies raise KeyError; callers expect a clear error instead.
    return round(amount_cents * RATES[currency])
