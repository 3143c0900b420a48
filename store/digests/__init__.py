"""Digests: similar proposals shown together in one Slack message, kept in the store's database
and on its audit chain.

- ``records``: a digest, its errors, and when a second one of the same message conflicts
- ``verbs``: the DigestStore every backend gives through ``Store.digests()``, written once
  over the connector, and the row it reads
- ``sql/``: its named queries, common and per dialect
"""

from __future__ import annotations

from store.digests.records import (
    BatchNotFound,
    Digest,
    DigestNotFound,
    NewDigest,
    conflict,
    new_digest_id,
)
from store.digests.verbs import DigestStore, digest_from_row

__all__ = [
    "BatchNotFound",
    "Digest",
    "DigestNotFound",
    "DigestStore",
    "NewDigest",
    "conflict",
    "digest_from_row",
    "new_digest_id",
]
