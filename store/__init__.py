"""Durable state, cut by table family: proposals/, audit/, escalations/, standing/,
delegations/ and digests/ each hold their records, their store written once over the connector
and their named SQL; protocol.py is the Store every backend (sqlite.py, postgres.py) gives, and
verbs.py writes it once. docs/store.md shows the layout. This package imports nothing, so that
importing one module of it imports no family it does not need."""
