"""A secret being replaced: while the receiver knows both, a signature under either verifies;
under neither, or of another kind, it does not."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.signing import CALLBACK, EXECUTION, sign, verify

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
STAMP = int(NOW.timestamp())
BODY = b'{"operation":"crm.send_campaign"}'


def test_a_signature_under_the_old_or_the_new_secret_verifies_during_a_change_over() -> None:
    both = ["new-secret-0123456789", "old-secret-0123456789"]
    for secret in both:
        signature = sign(secret, STAMP, BODY, purpose=EXECUTION)
        assert verify(both, STAMP, BODY, signature, now=NOW, purpose=EXECUTION)
        assert not verify(both, STAMP, BODY, signature, now=NOW, purpose=CALLBACK)
    retired = sign("retired-secret-012345", STAMP, BODY, purpose=EXECUTION)
    assert not verify(both, STAMP, BODY, retired, now=NOW, purpose=EXECUTION)
    assert not verify(["", ""], STAMP, BODY, retired, now=NOW, purpose=EXECUTION)
    # after the change-over, the old secret alone no longer verifies the new one's signatures
    fresh = sign(both[0], STAMP, BODY, purpose=EXECUTION)
    assert not verify(both[1], STAMP, BODY, fresh, now=NOW, purpose=EXECUTION)
