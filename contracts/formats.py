"""How an operation's fields read to a person: a label, and money, counts, durations, dates or
labelled choices shown in the operation's own terms.

An operation declares a :class:`FieldFormat` for each field it wants shown well (a Python
operation in ``field_formats()``, a configured one under ``fields``). Countersign shows
arguments and results through them wherever a person reads them: the policy's conditions
("Amount 450.00 USD ≤ 2,000.00 USD limit"), the outcome in the thread, what an edit changed.
A field without one is shown under its name written as words ("Refund id"), its value as is.

Money is held in minor units (cents) unless ``minor_units`` is false, in a fixed ``currency`` or
in the currency another field holds (``currency_field``); ``currencies`` lists the currencies
that field can hold, when the operation knows them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Final, Literal, Self

from pydantic import Field, JsonValue, model_validator

from contracts.durations import spoken_duration
from contracts.frozen import Frozen

__all__ = [
    "FORMAT_KINDS",
    "FieldFormat",
    "FormatKind",
    "Formats",
    "field_label",
    "format_money",
    "major_units",
    "minor_digits",
    "money_currency",
    "parse_major_units",
    "parse_money",
    "show_value",
]

FormatKind = Literal["text", "money", "count", "duration", "date", "choice"]
FORMAT_KINDS: Final[tuple[FormatKind, ...]] = (
    "text",
    "money",
    "count",
    "duration",
    "date",
    "choice",
)
DurationUnit = Literal["seconds", "minutes", "hours", "days"]
_UNIT_SECONDS: Final[Mapping[str, int]] = {
    "seconds": 1,
    "minutes": 60,
    "hours": 3_600,
    "days": 86_400,
}

#: The longest duration spoken in days, hours and minutes (about 31.7 million years); a value
#: past it is shown as it is.
_LONGEST_SPOKEN: Final = 10**15

#: ISO 4217 currencies whose minor unit is not a hundredth.
MINOR_DIGITS: Final[Mapping[str, int]] = {
    **dict.fromkeys(("BIF", "CLP", "JPY", "KRW", "PYG", "RWF", "UGX", "VND", "XAF", "XOF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
}
_CURRENCY: Final = re.compile(r"^[A-Z]{3}$")
_MONEY_TEXT: Final = re.compile(r"^\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?)\s+([A-Z]{3})\s*$")
#: an amount as a person types it in major units: digits, a point and decimals, nothing else
_MAJOR_TEXT: Final = re.compile(r"[0-9]{1,30}(?:\.[0-9]*)?|\.[0-9]+")


class FieldFormat(Frozen):
    """How one field is shown: its ``label``, and what kind of figure its value is."""

    label: str = Field(min_length=1, max_length=80)
    kind: FormatKind = "text"
    #: money: the currency every value is in (ISO 4217), or
    currency: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")
    #: money: the argument holding each value's currency
    currency_field: str | None = Field(default=None, min_length=1)
    #: money with ``currency_field``: the currencies it can hold, when known (empty: unknown)
    currencies: tuple[str, ...] = ()
    #: money: whether values count minor units (cents), as integers
    minor_units: bool = True
    #: count: what is counted ("customers"); duration: the unit values are in
    unit: str | None = Field(default=None, min_length=1, max_length=40)
    #: choice: the label of each value
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        money = (self.currency, self.currency_field, self.currencies)
        if self.kind == "money":
            if (self.currency is None) == (self.currency_field is None):
                raise ValueError("a money field needs exactly one of currency or currency_field")
            if self.currency is not None and self.currencies:
                raise ValueError("currencies lists what currency_field may hold; not with currency")
            bad = [code for code in self.currencies if not _CURRENCY.match(code)]
            if bad:
                raise ValueError(f"currencies: expected ISO 4217 codes such as 'USD', got {bad}")
        elif any(money) or not self.minor_units:
            raise ValueError("currency, currency_field, currencies and minor_units are for money")
        if self.kind == "duration" and self.unit not in _UNIT_SECONDS:
            raise ValueError(
                f"a duration needs unit 'seconds', 'minutes', 'hours' or 'days', got {self.unit!r}"
            )
        if self.unit is not None and self.kind not in ("count", "duration"):
            raise ValueError("unit is for a count (what is counted) or a duration")
        if self.labels and self.kind != "choice":
            raise ValueError("labels are for a choice")
        if self.kind == "choice" and not self.labels:
            raise ValueError("a choice needs labels, one for each value")
        return self

    @property
    def several_currencies(self) -> bool:
        """Whether values may be in more than one currency that is known to be used."""
        return self.kind == "money" and len(set(self.currencies)) > 1


#: An operation's formats, by field name.
Formats = Mapping[str, FieldFormat]


def field_label(formats: Formats, name: str) -> str:
    """The field's declared label, or its name written as words (``refund_id`` -> "Refund id")."""
    declared = formats.get(name)
    if declared is not None:
        return declared.label
    words = name.replace("_", " ").replace("-", " ").strip()
    return (words[:1].upper() + words[1:]) if words else name


def money_currency(fmt: FieldFormat, arguments: Mapping[str, JsonValue]) -> str | None:
    """The currency of a money field's value among ``arguments``, or None when unknown."""
    if fmt.currency is not None:
        return fmt.currency
    held = arguments.get(fmt.currency_field or "")
    return held if isinstance(held, str) and _CURRENCY.match(held) else None


def format_money(amount_cents: int, currency: str) -> str:
    """``12000, "USD"`` -> ``"120.00 USD"``: the amount in minor units, shown in major units."""
    digits = minor_digits(currency)
    sign = "-" if amount_cents < 0 else ""
    whole, fraction = divmod(abs(amount_cents), 10**digits)
    shown = f"{whole:,}" if digits == 0 else f"{whole:,}.{fraction:0{digits}d}"
    return f"{sign}{shown} {currency}"


def minor_digits(currency: str) -> int:
    """How many decimals ``currency`` has (ISO 4217): 2 for USD, 0 for JPY, 3 for KWD."""
    return MINOR_DIGITS.get(currency, 2)


def major_units(amount_minor: int, currency: str) -> str:
    """``45000, "USD"`` -> ``"450.00"``: an amount in minor units as a person types it in major
    units (no currency, no thousands separators)."""
    return format_money(amount_minor, currency).removesuffix(f" {currency}").replace(",", "")


def parse_major_units(text: str, currency: str) -> int:
    """``"450.00", "USD"`` -> ``45000``: an amount typed in major units, in minor units, exactly
    (decimal arithmetic). ValueError says what was expected: a number that is not negative, with
    no more decimals than the currency has, a point before the decimals and no separators."""
    digits = minor_digits(currency)
    example = major_units(45000 if digits else 450, currency)
    figure = text.strip()
    unsigned = figure.removeprefix("-").removeprefix("+")
    if not _MAJOR_TEXT.fullmatch(unsigned):
        raise ValueError(
            f"expected an amount in {currency} such as {example} (a point before the decimals, "
            f"no thousands separators), got {text!r}"
        )
    amount = Decimal(unsigned)
    if figure.startswith("-") and amount:
        raise ValueError(f"expected an amount in {currency} that is not negative, got {text!r}")
    minor = _in_minor_units(amount, currency)
    if minor is None:
        places = f"at most {digits} decimals" if digits else "no decimals"
        raise ValueError(f"expected an amount in {currency} with {places}, got {text!r}")
    return minor


def _in_minor_units(amount: Decimal, currency: str) -> int | None:
    """``amount`` in major units as a whole number of ``currency``'s minor units, exactly; None
    when it has more decimals than the currency has."""
    minor = amount.scaleb(minor_digits(currency))
    return int(minor) if minor == minor.to_integral_value() else None


def parse_money(text: str, fmt: FieldFormat) -> tuple[int | float, str]:
    """``"2000.00 USD"`` -> ``(200000, "USD")`` for a money field in minor units (or
    ``(2000.0, "USD")`` for one in major units). ValueError says what was expected."""
    found = _MONEY_TEXT.match(text)
    if found is None:
        raise ValueError(f"expected an amount and its currency such as '2000.00 USD', got {text!r}")
    figure, currency = found.group(1).replace(",", ""), found.group(2)
    try:
        amount = Decimal(figure)
    except InvalidOperation:
        raise ValueError(f"{figure!r} is not an amount") from None
    if not fmt.minor_units:
        return float(amount), currency
    minor = _in_minor_units(amount, currency)
    if minor is None:
        raise ValueError(
            f"{text!r} has more decimals than {currency} has ({minor_digits(currency)})"
        )
    return minor, currency


def show_value(
    fmt: FieldFormat | None, value: JsonValue, arguments: Mapping[str, JsonValue] | None = None
) -> str:
    """``value`` as a person reads it, through ``fmt`` (with ``arguments``, the values it sits
    among, for a currency held by another field). Never raises: a value that does not fit its
    format is shown as it is."""
    if fmt is not None and not isinstance(value, bool):
        shown = _formatted(fmt, value, arguments or {})
        if shown is not None:
            return shown
    return _plain(value)


def _formatted(
    fmt: FieldFormat, value: JsonValue, arguments: Mapping[str, JsonValue]
) -> str | None:
    # an integer is always finite (and may be past a float's range: never made one)
    finite = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    number = value if finite and isinstance(value, int | float) else None
    if fmt.kind == "money" and number is not None:
        currency = money_currency(fmt, arguments)
        if fmt.minor_units and isinstance(number, int):
            if currency is None:
                return format_money(number, "XXX").replace(" XXX", " (currency unknown)")
            return format_money(number, currency)
        if fmt.minor_units:  # a float in minor units (JSON Schema takes 4500.0 for an integer)
            figure = _minor_float(number, currency or "XXX")
            return f"{figure} {currency}" if currency else f"{figure} (currency unknown)"
        exact = Decimal(number) if isinstance(number, int) else number  # to the last digit
        figure = f"{exact:,.2f}"
        return f"{figure} {currency}" if currency else f"{figure} (currency unknown)"
    if fmt.kind == "count" and number is not None:
        figure = f"{number:,}"
        return f"{figure} {fmt.unit}" if fmt.unit else figure
    if fmt.kind == "duration" and number is not None and fmt.unit is not None:
        seconds = number * _UNIT_SECONDS[fmt.unit]
        if abs(seconds) > _LONGEST_SPOKEN:
            return None  # shown as it is: spoken, it would be rounded (or not fit a float)
        spoken = spoken_duration(seconds)  # which ignores the sign: the value's is kept
        return f"-{spoken}" if seconds < 0 else spoken
    if fmt.kind == "date" and isinstance(value, str):
        return _date(value)
    if fmt.kind == "choice" and isinstance(value, str):
        label = fmt.labels.get(value)
        # a value it does not offer never reads as one it does (another choice's label)
        return label if label is not None else f"{value} (not one of its choices)"
    return None


def _minor_float(amount: float, currency: str) -> str:
    """A float amount in ``currency``'s minor units, in major units to its last digit: 4500.0
    cents read ``45.00``, 4500.5 cents ``45.005`` (never 4,500.00: that would be a hundred
    times what runs)."""
    digits = minor_digits(currency)
    major = Decimal(repr(amount)).scaleb(-digits)
    exponent = major.normalize().as_tuple().exponent
    places = max(digits, -exponent if isinstance(exponent, int) else 0)
    return f"{major:,.{places}f}"


def _date(text: str) -> str:
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}", text):  # a month: "2025-05" reads "May 2025"
            return date.fromisoformat(f"{text}-01").strftime("%B %Y")
        if len(text) == 10:
            return date.fromisoformat(text).strftime("%-d %b %Y")
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is None:
        return moment.strftime("%-d %b %Y, %H:%M")
    offset = moment.utcoffset()
    zone = "UTC" if offset is not None and not offset else moment.strftime("UTC%z")
    return f"{moment.strftime('%-d %b %Y, %H:%M')} {zone}"


def _plain(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
