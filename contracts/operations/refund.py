"""``payments.refund``: the example of an operation written in Python, against a small ledger.

The model names a payment and, optionally, an amount and a reason. The operation looks the payment
up, works out the amount (everything still refundable unless told otherwise), freezes it together
with what was refundable at that moment, and builds the preview from those same facts. Just before
execution it checks that nothing about the payment moved; the ledger refunds at most once per
idempotency key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, Protocol

from pydantic import (
    Field,
    NonNegativeInt,
    PositiveInt,
    StringConstraints,
    ValidationError,
    model_validator,
)

from contracts.base import (
    Context,
    ContractViolation,
    EffectFailed,
    FieldProblem,
    IdempotencyKey,
    ModelOperation,
    Preview,
    PreviewField,
    Resolved,
    RevisionNeeded,
    Risk,
)
from contracts.formats import FieldFormat, Formats, format_money
from contracts.frozen import Frozen
from contracts.outcomes import RevisionRequired
from contracts.toml_text import as_toml

__all__ = [
    "IdempotencyKeyReused",
    "InMemoryLedger",
    "Ledger",
    "LedgerError",
    "Payment",
    "PaymentNotSettled",
    "Refund",
    "RefundArgs",
    "RefundExceedsRefundable",
    "RefundReason",
    "RefundRecord",
    "RefundRequest",
    "RefundResult",
    "UnknownPayment",
    "format_money",
    "from_config",
]

PaymentId = Annotated[str, StringConstraints(pattern=r"^pay_[A-Za-z0-9]+$", max_length=64)]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
PaymentStatus = Literal["settled", "disputed", "voided"]
RefundReason = Literal["requested_by_customer", "duplicate", "fraudulent"]

# --- the ledger -----------------------------------------------------------------------------------


class Payment(Frozen):
    payment_id: PaymentId
    customer: Annotated[str, StringConstraints(min_length=1)]
    amount_cents: PositiveInt
    currency: Currency
    refunded_cents: NonNegativeInt = 0
    status: PaymentStatus = "settled"

    @model_validator(mode="after")
    def _refunds_within_amount(self) -> Payment:
        if self.refunded_cents > self.amount_cents:
            raise ValueError(
                f"refunded_cents {self.refunded_cents} exceeds amount_cents {self.amount_cents}"
            )
        return self

    @property
    def refundable_cents(self) -> int:
        return self.amount_cents - self.refunded_cents


class RefundRecord(Frozen):
    refund_id: str
    payment_id: str
    amount_cents: PositiveInt
    currency: Currency
    idempotency_key: str


class LedgerError(Exception):
    """The ledger refused the request; nothing changed."""


class UnknownPayment(LedgerError):
    """No payment has that id."""


class PaymentNotSettled(LedgerError):
    """Only settled payments can be refunded."""


class RefundExceedsRefundable(LedgerError):
    """The amount is more than what is still refundable."""


class IdempotencyKeyReused(LedgerError):
    """That idempotency key already refunded something else."""


class Ledger(Protocol):
    async def payment(self, payment_id: str) -> Payment | None:
        """The payment as it is now, or None."""
        ...

    async def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> RefundRecord:
        """Refund once per key: the same key returns the first refund and refunds nothing more.

        Raises UnknownPayment, PaymentNotSettled, RefundExceedsRefundable, or
        IdempotencyKeyReused when the key was used for another payment or amount.
        """
        ...


class InMemoryLedger:
    """A ledger held in memory: the demo deployment's and the tests' payments."""

    def __init__(self, payments: Iterable[Payment] = ()) -> None:
        self._payments: dict[str, Payment] = {}
        for payment in payments:
            if payment.payment_id in self._payments:
                raise ValueError(f"ledger: payment {payment.payment_id!r} is listed twice")
            self._payments[payment.payment_id] = payment
        self._refunds: dict[str, RefundRecord] = {}

    @classmethod
    def from_config(cls, entries: Iterable[Mapping[str, Any]]) -> InMemoryLedger:
        """Seed from configuration: one table per payment, with Payment's fields."""
        payments = []
        for index, entry in enumerate(entries):
            where = f"payments[{index}]"
            if not isinstance(entry, Mapping):
                raise ValueError(
                    f"{where}: expected a table of payment fields, got {as_toml(entry)}"
                )
            try:
                payments.append(Payment.model_validate_json(json.dumps(dict(entry))))
            except ValidationError as error:
                raise ValueError(_describe(where, error)) from None
            except (TypeError, ValueError) as error:
                raise ValueError(f"{where}: {error}") from None
        return cls(payments)

    async def payment(self, payment_id: str) -> Payment | None:
        return self._payments.get(payment_id)

    async def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> RefundRecord:
        # No await between the checks and the update: one refund at a time, even under asyncio.
        earlier = self._refunds.get(idempotency_key)
        if earlier is not None:
            if (earlier.payment_id, earlier.amount_cents) != (payment_id, amount_cents):
                asked = self._payments.get(payment_id)
                shown = (
                    format_money(amount_cents, asked.currency)
                    if asked is not None
                    else f"{amount_cents} minor units"
                )
                raise IdempotencyKeyReused(
                    f"idempotency key {idempotency_key!r} already refunded "
                    f"{format_money(earlier.amount_cents, earlier.currency)} on "
                    f"{earlier.payment_id}; asked for {shown} on {payment_id}"
                )
            return earlier
        payment = self._existing(payment_id)
        if payment.status != "settled":
            raise PaymentNotSettled(f"payment {payment_id} is {payment.status}, not settled")
        if amount_cents <= 0:
            raise ValueError(f"amount_cents must be positive, got {amount_cents}")
        if amount_cents > payment.refundable_cents:
            raise RefundExceedsRefundable(
                f"cannot refund {format_money(amount_cents, payment.currency)} on {payment_id}: "
                f"only {format_money(payment.refundable_cents, payment.currency)} is refundable"
            )
        record = RefundRecord(
            refund_id=f"re_{len(self._refunds) + 1:06d}",
            payment_id=payment_id,
            amount_cents=amount_cents,
            currency=payment.currency,
            idempotency_key=idempotency_key,
        )
        self._refunds[idempotency_key] = record
        self._payments[payment_id] = payment.model_copy(
            update={"refunded_cents": payment.refunded_cents + amount_cents}
        )
        return record

    # --- changes made outside Countersign (tests and demos use these) ---------------------------

    def dispute(self, payment_id: str) -> None:
        """The customer disputed the payment with their bank."""
        self._set_status(payment_id, "disputed")

    def void(self, payment_id: str) -> None:
        self._set_status(payment_id, "voided")

    def record_outside_refund(self, payment_id: str, amount_cents: int) -> None:
        """Someone refunded part of the payment by other means."""
        payment = self._existing(payment_id)
        if not 0 < amount_cents <= payment.refundable_cents:
            raise RefundExceedsRefundable(
                f"outside refund of {format_money(amount_cents, payment.currency)} on "
                f"{payment_id}: expected more than nothing and at most "
                f"{format_money(payment.refundable_cents, payment.currency)}"
            )
        self._payments[payment_id] = payment.model_copy(
            update={"refunded_cents": payment.refunded_cents + amount_cents}
        )

    @property
    def currencies(self) -> frozenset[str]:
        """The currencies of the payments it holds."""
        return frozenset(payment.currency for payment in self._payments.values())

    @property
    def refunds(self) -> tuple[RefundRecord, ...]:
        """Every refund made through :meth:`refund`, oldest first."""
        return tuple(self._refunds.values())

    def _existing(self, payment_id: str) -> Payment:
        try:
            return self._payments[payment_id]
        except KeyError:
            raise UnknownPayment(f"no payment {payment_id!r} in the ledger") from None

    def _set_status(self, payment_id: str, status: PaymentStatus) -> None:
        payment = self._existing(payment_id)
        self._payments[payment_id] = payment.model_copy(update={"status": status})


def _describe(where: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        field = ".".join([where, *(str(part) for part in item["loc"])])
        given = item.get("input")
        shown = f" (got {as_toml(given)})" if item["type"] != "missing" and item["loc"] else ""
        problems.append(f"{field}: {item['msg']}{shown}")
    return "; ".join(problems)


# --- the operation --------------------------------------------------------------------------------


class RefundRequest(Frozen):
    """What the model sends: which payment, and optionally how much and why."""

    payment_id: PaymentId = Field(
        description="The payment to refund, e.g. pay_8f3k2.", examples=["pay_8f3k2"]
    )
    amount_cents: PositiveInt | None = Field(
        default=None,
        description="Amount in minor units (cents). Omit to refund everything still refundable.",
    )
    reason: RefundReason = Field(
        default="requested_by_customer", description="Why the refund is made."
    )


class RefundArgs(Frozen):
    payment_id: PaymentId
    amount_cents: PositiveInt  #: computed by the operation, never taken from the model as is
    currency: Currency
    customer: str
    reason: RefundReason
    refundable_cents_at_preview: PositiveInt  #: what was refundable when the preview was made


class RefundResult(Frozen):
    refund_id: str
    payment_id: str
    amount_cents: PositiveInt
    currency: Currency


_REASON_LABELS: Final[dict[str, str]] = {
    "requested_by_customer": "Requested by customer",
    "duplicate": "Duplicate payment",
    "fraudulent": "Fraudulent payment",
}


class Refund(ModelOperation[RefundRequest, RefundArgs, RefundResult]):
    name = "payments.refund"
    description = "Refund a settled card payment, in full or in part."
    risk: Risk = "irreversible"  #: money leaves the business: asked for or denied, never auto
    request_model: ClassVar[type[RefundRequest]] = RefundRequest
    arguments_model: ClassVar[type[RefundArgs]] = RefundArgs
    result_model: ClassVar[type[RefundResult]] = RefundResult

    def __init__(
        self,
        ledger: Ledger,
        *,
        name: str = "payments.refund",
        currencies: Iterable[str] | None = None,
    ) -> None:
        """``currencies``: those the ledger's payments are in, when known (an in-memory
        ledger knows its own); policy thresholds on amounts name one where there are several."""
        self.name = name
        self._ledger = ledger
        if currencies is None and isinstance(ledger, InMemoryLedger):
            currencies = ledger.currencies
        self._currencies = tuple(sorted(set(currencies or ())))

    def field_formats(self) -> Formats:
        def money(label: str) -> FieldFormat:
            return FieldFormat(
                label=label,
                kind="money",
                currency_field="currency",
                currencies=self._currencies,
            )

        return {
            "payment_id": FieldFormat(label="Payment"),
            "amount_cents": money("Amount"),
            "currency": FieldFormat(label="Currency"),
            "customer": FieldFormat(label="Customer"),
            "reason": FieldFormat(label="Refund reason", kind="choice", labels=_REASON_LABELS),
            "refundable_cents_at_preview": money("Refundable at preview"),
            "refund_id": FieldFormat(label="Refund"),
        }

    @property
    def ledger(self) -> Ledger:
        """The ledger refunds are made against."""
        return self._ledger

    async def resolve(self, request: RefundRequest, ctx: Context) -> Resolved[RefundArgs]:
        payment = await self._ledger.payment(request.payment_id)
        if payment is None:
            raise _violation("request.payment_id", f"no payment {request.payment_id!r} exists")
        if payment.status != "settled":
            raise _violation(
                "request.payment_id",
                f"payment {payment.payment_id} is {payment.status}; "
                "only settled payments can be refunded",
            )
        refundable = payment.refundable_cents
        money = _money(payment.currency)
        if refundable == 0:
            raise _violation(
                "request.payment_id",
                f"payment {payment.payment_id} is fully refunded already "
                f"({money(payment.refunded_cents)})",
            )
        amount = refundable if request.amount_cents is None else request.amount_cents
        if amount > refundable:
            raise _violation(
                "request.amount_cents",
                f"{money(amount)} is more than is refundable on {payment.payment_id}: "
                f"expected at most {money(refundable)}",
            )
        arguments = RefundArgs(
            payment_id=payment.payment_id,
            amount_cents=amount,
            currency=payment.currency,
            customer=payment.customer,
            reason=request.reason,
            refundable_cents_at_preview=refundable,
        )
        return Resolved(arguments=arguments, preview=_preview(arguments, payment))

    async def revalidate(self, arguments: RefundArgs, ctx: Context) -> RevisionRequired | None:
        payment = await self._ledger.payment(arguments.payment_id)
        if payment is None:
            return RevisionRequired(
                reason=f"payment {arguments.payment_id} no longer exists in the ledger"
            )
        if payment.status != "settled":
            return RevisionRequired(
                reason=f"payment {payment.payment_id} was settled when the preview was made "
                f"and is now {payment.status}"
            )
        before, now = arguments.refundable_cents_at_preview, payment.refundable_cents
        if before != now:
            money = _money(payment.currency)
            return RevisionRequired(
                reason=f"refundable amount on {payment.payment_id} changed since the preview: "
                f"was {money(before)}, now {money(now)}"
            )
        return None

    async def perform(
        self, arguments: RefundArgs, ctx: Context, key: IdempotencyKey
    ) -> RefundResult:
        try:
            record = await self._ledger.refund(arguments.payment_id, arguments.amount_cents, key)
        except (UnknownPayment, PaymentNotSettled, RefundExceedsRefundable) as error:
            raise RevisionNeeded(str(error)) from error
        except IdempotencyKeyReused as error:
            raise EffectFailed(str(error)) from error
        return RefundResult(
            refund_id=record.refund_id,
            payment_id=record.payment_id,
            amount_cents=record.amount_cents,
            currency=record.currency,
        )


def from_config(name: str, options: Mapping[str, Any]) -> Refund:
    """The refund operation from its configuration table, whose ``payments`` seed the ledger."""
    unknown = sorted(set(options) - {"payments"})
    if unknown:
        raise ValueError(f"unknown option {', '.join(unknown)} (expected: payments)")
    payments = options.get("payments", [])
    if not isinstance(payments, list):
        raise ValueError(f"payments: expected an array of payment tables, got {as_toml(payments)}")
    return Refund(InMemoryLedger.from_config(payments), name=name)


def _violation(field: str, message: str) -> ContractViolation:
    return ContractViolation([FieldProblem(field=field, message=message)])


def _money(currency: str) -> Callable[[int], str]:
    def money(cents: int) -> str:
        return format_money(cents, currency)

    return money


def _preview(arguments: RefundArgs, payment: Payment) -> Preview:
    money = _money(arguments.currency)
    amount = money(arguments.amount_cents)
    if arguments.amount_cents == payment.amount_cents:
        scope = "full refund"
    elif arguments.amount_cents == arguments.refundable_cents_at_preview:
        scope = "all that remains refundable"
    else:
        scope = "partial refund"
    return Preview(
        title=f"Refund {amount} to {arguments.customer}",
        fields=(
            PreviewField(
                label="Payment", value=f"{payment.payment_id} ({money(payment.amount_cents)})"
            ),
            PreviewField(label="Customer", value=arguments.customer),
            PreviewField(label="Amount", value=f"{amount} ({scope})"),
            PreviewField(
                label="Refundable now", value=money(arguments.refundable_cents_at_preview)
            ),
            PreviewField(label="Already refunded", value=money(payment.refunded_cents)),
            PreviewField(label="Refund reason", value=_REASON_LABELS[arguments.reason]),
        ),
    )
