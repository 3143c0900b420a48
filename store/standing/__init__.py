"""Standing rules (an approval that also covers later calls like it, within a ceiling, a number
of uses and an expiry) and reviews of sampled automatic approvals, kept in the store's database
and on its audit chain.

- ``records``: a stored rule, review statistics, the answers of revoking and reviewing, the
  errors, and the audit details every backend writes alike
- ``verbs``: the StandingStore every backend gives through ``Store.standing()``, written once
  over the connector, and the rows it reads
- ``sql/``: its named queries, common and per dialect
"""

from __future__ import annotations

from store.standing.records import (
    AlreadyReviewed,
    Reviewed,
    ReviewResult,
    ReviewStats,
    RevokeResult,
    RuleHistory,
    StandingRule,
    StandingRuleNotFound,
    Verdict,
    approval_detail,
    grant_detail,
    grant_refusal,
)
from store.standing.verbs import (
    HISTORY_DAYS,
    HISTORY_MOST,
    StandingStore,
    review_from_row,
    standing_rule_from_row,
)

__all__ = [
    "HISTORY_DAYS",
    "HISTORY_MOST",
    "AlreadyReviewed",
    "ReviewResult",
    "ReviewStats",
    "Reviewed",
    "RevokeResult",
    "RuleHistory",
    "StandingRule",
    "StandingRuleNotFound",
    "StandingStore",
    "Verdict",
    "approval_detail",
    "grant_detail",
    "grant_refusal",
    "review_from_row",
    "standing_rule_from_row",
]
