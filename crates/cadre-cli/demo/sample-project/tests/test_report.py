from report import balances


def test_balances_convert_to_eur():
    text = "2026-01-02 food 10.00 EUR\n2026-01-03 food 10.00 USD\n"
    assert balances(text) == {"food": 1920}
