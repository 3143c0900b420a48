"""Fixtures the end-to-end tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.store.conftest import POSTGRES_URL, new_schema


@asynccontextmanager
async def new_postgres_url() -> AsyncIterator[str]:
    """A new PostgreSQL schema for instances to share, dropped afterwards: its store URL."""
    async with new_schema() as schema:
        yield f"{POSTGRES_URL}?search_path={schema}"


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """The store URL of a new PostgreSQL schema for the test (:func:`new_postgres_url`)."""
    async with new_postgres_url() as url:
        yield url
