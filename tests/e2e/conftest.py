"""Fixtures the end-to-end tests share."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A new PostgreSQL schema for instances to share, dropped afterwards: its store URL."""
    schema = f"countersign_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(POSTGRES)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        yield f"{POSTGRES}?search_path={schema}"
    finally:
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()
