"""Fixtures the end-to-end tests share."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


@asynccontextmanager
async def new_postgres_url() -> AsyncIterator[str]:
    """A new PostgreSQL schema for instances to share, dropped afterwards: its store URL."""
    schema = f"countersign_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(POSTGRES)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        yield f"{POSTGRES}?search_path={schema}"
    finally:
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """The store URL of a new PostgreSQL schema for the test (:func:`new_postgres_url`)."""
    async with new_postgres_url() as url:
        yield url
