"""The PostgreSQL names of the row readers, for callers not yet moved to store/rows.py, whose
readers take SQLite's and PostgreSQL's rows alike."""

from __future__ import annotations

from store.rows import delivery_from_row, proposal_from_row

__all__ = ["delivery_from_record", "proposal_from_record"]

delivery_from_record = delivery_from_row
proposal_from_record = proposal_from_row
