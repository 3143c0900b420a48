"""Fixtures the store's tests share."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import asyncpg
import pytest

#: The PostgreSQL the store's tests use (trust auth, on this machine and in CI).
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@asynccontextmanager
async def new_schema() -> AsyncIterator[str]:
    """A new, empty PostgreSQL schema, dropped with everything in it afterwards."""
    name = f"countersign_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(POSTGRES_URL)
    try:
        await admin.execute(f'CREATE SCHEMA "{name}"')
        yield name
    finally:
        await admin.execute(f'DROP SCHEMA "{name}" CASCADE')
        await admin.close()


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    """A new, empty PostgreSQL schema for the test (:func:`new_schema`)."""
    async with new_schema() as name:
        yield name


@pytest.fixture
async def connect(schema: str) -> AsyncIterator[Callable[[], Awaitable[asyncpg.Connection]]]:
    """Opens plain connections to the test's schema, bypassing the store (autocommit); closes
    them after the test."""
    opened: list[asyncpg.Connection] = []

    async def connect_() -> asyncpg.Connection:
        db = await asyncpg.connect(POSTGRES_URL, server_settings={"search_path": schema})
        opened.append(db)
        return db

    yield connect_
    for db in opened:
        await db.close()
