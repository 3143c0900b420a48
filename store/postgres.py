"""The PostgreSQL backend of the Store protocol, for several instances sharing one database.

An asyncpg connection pool per store. Every write is one transaction (READ COMMITTED) that
changes its proposal with a compare-and-set (``UPDATE ... WHERE status = ... RETURNING *``),
writes the outbox entries of the new status and appends its audit entry; when no row comes back,
the proposal is re-read to say why. Appends lock the single ``audit_head`` row first (``SELECT
... FOR UPDATE``), so entries written by any number of connections and processes form one linear
hash chain. Expiry, reclaiming lost executions and leasing outbox entries take their rows with
``FOR UPDATE SKIP LOCKED``: instances doing them at once never do one twice, nor wait for each
other. Lock order is always proposal rows first, then the audit head, so writers never deadlock.
The database announces each committed change; :meth:`PostgresStore.listen` hears them all.
Queries live in ``store/pg_queries.py``, row mapping in ``store/pg_rows.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

import asyncpg
from pydantic import JsonValue

from contracts.outcomes import NeedsReconciliation, Outcome
from contracts.redaction import scrub, shown_store_url
from store import pg_queries as sql
from store.approvals import ApprovalVerbs
from store.audit_log import AuditVerbs
from store.base import (
    AuditEntry,
    IdempotencyConflict,
    InvalidTransition,
    NewProposal,
    Proposal,
    ProposalNotFound,
    StoreError,
    StoreUnavailable,
    Transitioned,
    TransitionResult,
)
from store.delegations import Delegations
from store.digests import Digests
from store.edits import check_edit, edited_detail, superseded_detail
from store.escalation_store import Escalations
from store.lifecycle import INITIAL, OUTCOME_STATUS, Status
from store.migrate import MigrationError, load_migrations
from store.outbox import OutboxVerbs
from store.pg_changes import ChangeFeed
from store.pg_errors import DRIVER_ERRORS, translate
from store.pg_migrate import apply_migrations
from store.pg_rows import aware, new_proposal_args, proposal_from_record
from store.pg_tx import PgTx
from store.reminders import ReminderVerbs
from store.rows import dump_json, outcome_json
from store.shield import finish_even_if_cancelled
from store.standing import policy_detail
from store.standing_rules import StandingRules
from store.verdicts import not_reconcilable, refusal

__all__ = ["PostgresStore", "redacted"]

if TYPE_CHECKING:
    from store.pg_migrate import Connection

#: Who writes the audit entries that no person or agent caused.
POLICY_ACTOR = "policy"
EXPIRY_ACTOR = "expiry"
EXECUTOR_ACTOR = "executor"
SLACK_ACTOR = "slack"

#: The outcome a lost execution is given: nobody knows whether its effect happened.
_ABANDONED = NeedsReconciliation(
    detail="the process executing it stopped before recording an outcome; the effect may or may "
    "not have happened",
    correlation_id="lease-expired",
)

#: The audit event the policy's own decision adds to "submitted" (ask adds none).
_POLICY_EVENT = {Status.EXECUTING: "auto_approved", Status.DENIED: "denied"}

Isolation = Literal["read_committed", "repeatable_read"]


def redacted(url: str) -> str:
    """``url`` without its password, fit for messages and logs (contracts/redaction.py)."""
    return shown_store_url(url)


class PostgresStore(ApprovalVerbs, ReminderVerbs, AuditVerbs, OutboxVerbs):
    """A Store on a PostgreSQL database. Create it with :meth:`open`."""

    def __init__(
        self,
        pool: asyncpg.Pool[asyncpg.Record],
        *,
        listen_connect: Callable[[], Awaitable[asyncpg.Connection[asyncpg.Record]]] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``listen_connect`` opens the connection that hears other instances' changes."""
        self._pool = pool
        self._changes = ChangeFeed(listen_connect or _cannot_listen)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._closed = False
        self._escalations: Escalations | None = None

    def escalations(self) -> Escalations:
        """The escalations kept in this database, sharing its pool and audit chain."""
        if self._escalations is None:
            self._escalations = Escalations(self)
        return self._escalations

    def standing(self) -> StandingRules:
        """Standing rules and reviews in this database, sharing its pool and audit chain."""
        return StandingRules(self)

    def delegations(self) -> Delegations:
        """Delegations from Slack in this database, sharing its pool and audit chain."""
        return Delegations(self)

    def digests(self) -> Digests:
        """Digests of similar proposals in this database, sharing its pool and audit chain."""
        return Digests(self)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        durable: bool = True,
        min_size: int = 1,
        max_size: int = 10,
        server_settings: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
    ) -> PostgresStore:
        """Connect a pool to ``url`` (``postgresql://user@host:port/database``) and migrate.

        ``durable=False`` turns off ``synchronous_commit`` for the store's sessions: faster, and
        a server crash may lose the last commits (never corrupt the database).
        ``server_settings`` are session settings for every connection (``search_path`` picks
        a schema). ``clock`` stamps the one verb without a ``now`` (attach_message).
        """
        settings = {"application_name": "countersign", **(server_settings or {})}
        if not durable:
            settings.setdefault("synchronous_commit", "off")
        where = redacted(url)
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max_size,
                server_settings=settings,
                timeout=connect_timeout,
            )
        except DRIVER_ERRORS as error:
            raise StoreUnavailable(
                f"cannot open PostgreSQL database {where}: {translate(error)}"
            ) from error
        except ValueError as error:  # asyncpg's own checks of the URL and its options
            raise StoreError(f"store URL {where}: {scrub(str(error), url)}") from error
        try:
            async with pool.acquire() as db:
                await apply_migrations(db, load_migrations("postgres"))
        except BaseException as error:
            pool.terminate()
            if isinstance(error, MigrationError):
                raise StoreUnavailable(f"PostgreSQL database {where}: {error}") from error
            if isinstance(error, DRIVER_ERRORS):
                raise StoreUnavailable(
                    f"PostgreSQL database {where}: {translate(error)}"
                ) from error
            raise

        def listen_connect() -> Awaitable[asyncpg.Connection[asyncpg.Record]]:
            return asyncpg.connect(url, server_settings=settings, timeout=connect_timeout)

        return cls(pool, listen_connect=listen_connect, clock=clock)

    async def listen(self, on_change: Callable[[str], None]) -> None:
        """From now on, call ``on_change(proposal_id)`` whenever any instance creates a proposal
        or changes its status (this one included), once the change has committed."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        await self._changes.subscribe(on_change)

    async def close(self) -> None:
        """Wait for the calls in progress to finish, then close every connection."""
        if not self._closed:
            self._closed = True
            await self._changes.close()
            await self._pool.close()

    # --- connections and transactions -------------------------------------------------------
    # connection, transaction, existing_proposal, append_audit and enqueue_effects are what the
    # feature stores sharing this pool and audit chain (pg_*.py) build their verbs with;
    # SqliteStore has the same names. They are not part of the Store protocol.

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection for single statements. Driver errors are translated here."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        try:
            async with self._pool.acquire() as db:
                yield db
        except DRIVER_ERRORS as error:
            if self._closed:
                raise StoreUnavailable("the store is closed") from error
            raise translate(error) from error

    @asynccontextmanager
    async def transaction(
        self, *, isolation: Isolation = "read_committed", readonly: bool = False
    ) -> AsyncIterator[Connection]:
        """One transaction on a pooled connection: committed at the end, rolled back on error."""
        async with self.connection() as db, db.transaction(isolation=isolation, readonly=readonly):
            yield db

    @asynccontextmanager
    async def tx(self, *, write: bool) -> AsyncIterator[PgTx]:
        """A transaction (READ COMMITTED) for a change; for reads, a pooled connection whose
        statements each see what has committed (store/backend.py)."""
        if write:
            async with self.transaction() as db:
                yield PgTx(db)
        else:
            async with self.connection() as db:
                yield PgTx(db)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PgTx]:
        """A read-only REPEATABLE READ transaction: its statements see one snapshot."""
        async with self.transaction(isolation="repeatable_read", readonly=True) as db:
            yield PgTx(db)

    def lone_write(self) -> AbstractAsyncContextManager[PgTx]:
        """A pooled connection outside a transaction: the statement commits on its own."""
        return self.tx(write=False)

    async def existing_proposal(self, db: Connection, proposal_id: str) -> Proposal:
        """The proposal with its approvals, read inside ``db``'s transaction; ProposalNotFound."""
        return await PgTx(db).existing_proposal(proposal_id)

    async def with_approvals(
        self, db: Connection, proposals: Sequence[Proposal], *, every: bool = False
    ) -> list[Proposal]:
        """``proposals`` with their approvals, read inside ``db``'s transaction."""
        return await PgTx(db).with_approvals(proposals, every=every)

    async def append_audit(
        self,
        db: Connection,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> AuditEntry:
        """Append one entry after the head of the chain, inside the caller's transaction."""
        return await PgTx(db).append_audit(at, proposal_id, actor, event, detail)

    async def enqueue_effects(self, db: Connection, row: asyncpg.Record, now: datetime) -> Proposal:
        """Write the outbox entries of the status ``row`` just entered; return the proposal."""
        return await PgTx(db).enqueue_effects(row, now)

    # --- the protocol -----------------------------------------------------------------------

    @finish_even_if_cancelled
    async def create_proposal(self, new: NewProposal) -> tuple[Proposal, bool]:
        if new.status not in INITIAL:
            raise InvalidTransition(
                f"proposal {new.id!r}: cannot be created with status {new.status.value!r}; "
                f"expected one of {sorted(s.value for s in INITIAL)}"
            )
        if (new.status is Status.EXECUTING) != (new.lease_until is not None):
            raise ValueError(
                f"proposal {new.id!r}: lease_until is required exactly when it is created "
                f"executing (status {new.status.value!r}, lease_until {new.lease_until!r})"
            )
        args = new_proposal_args(new)
        async with self.transaction() as db:
            row = await db.fetchrow(sql.INSERT_PROPOSAL, *args)
            if row is None:  # the agent used this submission key before
                found = await db.fetchrow(
                    sql.SELECT_BY_SUBMISSION_KEY, new.agent, new.submission_key
                )
                assert found is not None  # the row whose unique key refused the insert
                [existing] = await self.with_approvals(db, [proposal_from_record(found)])
                if existing.submission_fingerprint != new.submission_fingerprint:
                    raise IdempotencyConflict(existing)
                return existing, False
            return await self._submitted(db, new, row), True

    async def _submitted(
        self,
        db: Connection,
        new: NewProposal,
        row: asyncpg.Record,
        edit: Mapping[str, JsonValue] | None = None,
    ) -> Proposal:
        """The audit entries and effects of the proposal ``row`` just inserted (and of the edit
        it is, when ``edit`` holds the "edited" entry's detail)."""
        submitted = {
            "operation": new.operation,
            "decision": new.decision,
            "rule_id": new.rule_id,
            "status": new.status.value,
        }
        if new.delegation_id is not None:  # the delegation behind requested_by
            submitted |= {"delegation_id": new.delegation_id, "requested_by": new.requested_by}
        await self.append_audit(db, new.created_at, new.id, new.agent, "submitted", submitted)
        if edit is not None:
            editor = new.edited_by or "unknown"
            await self.append_audit(db, new.created_at, new.id, editor, "edited", edit)
        if new.status in _POLICY_EVENT:
            policy = policy_detail(new)
            event = _POLICY_EVENT[new.status]
            await self.append_audit(db, new.created_at, new.id, POLICY_ACTOR, event, policy)
        return await self.enqueue_effects(db, row, new.created_at)

    @finish_even_if_cancelled
    async def get_proposal(self, proposal_id: str) -> Proposal:
        async with self.connection() as db:
            return await self.existing_proposal(db, proposal_id)

    @finish_even_if_cancelled
    async def find_submission(self, agent: str, submission_key: str) -> Proposal | None:
        async with self.connection() as db:
            row = await db.fetchrow(sql.SELECT_BY_SUBMISSION_KEY, agent, submission_key)
            if row is None:
                return None
            [proposal] = await self.with_approvals(db, [proposal_from_record(row)])
            return proposal

    @finish_even_if_cancelled
    async def pending_proposals(
        self, *, limit: int = 100, agent: str | None = None
    ) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        async with self.connection() as db:
            if agent is None:
                rows = await db.fetch(sql.SELECT_PENDING, limit)
            else:
                rows = await db.fetch(sql.SELECT_PENDING_OF_AGENT, agent, limit)
            return await self.with_approvals(db, [proposal_from_record(row) for row in rows])

    @finish_even_if_cancelled
    async def count_pending(self, agent: str) -> int:
        async with self.connection() as db:
            count = await db.fetchval(sql.COUNT_PENDING, agent)
            return int(count or 0)

    @finish_even_if_cancelled
    async def pending_by_agent(self) -> dict[str, int]:
        async with self.connection() as db:
            rows = await db.fetch(sql.COUNT_PENDING_BY_AGENT)
            return {str(row["agent"]): int(row["pending"]) for row in rows}

    @finish_even_if_cancelled
    async def decisions_by(self, user: str, *, limit: int = 10) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        async with self.connection() as db:
            rows = await db.fetch(sql.SELECT_DECIDED_BY, user, limit)
            return await self.with_approvals(db, [proposal_from_record(row) for row in rows])

    @finish_even_if_cancelled
    async def attach_message(self, proposal_id: str, channel: str, ts: str) -> Proposal:
        now = aware(self._clock(), field="clock()")
        async with self.transaction() as db:
            row = await db.fetchrow(sql.UPDATE_MESSAGE, proposal_id, channel, ts, now)
            if row is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            detail = {"channel": channel, "ts": ts}
            await self.append_audit(db, now, proposal_id, SLACK_ACTOR, "posted_to_slack", detail)
            [proposal] = await self.with_approvals(db, [proposal_from_record(row)])
            return proposal

    @finish_even_if_cancelled
    async def retry_execution(
        self, proposal_id: str, *, actor: str, now: datetime, lease_until: datetime
    ) -> TransitionResult:
        at, lease = aware(now, field="now"), aware(lease_until, field="lease_until")
        async with self.transaction() as db:
            row = await db.fetchrow(sql.RETRY, proposal_id, at, lease)
            if row is None:
                return not_reconcilable(await self.existing_proposal(db, proposal_id))
            await self.append_audit(db, at, proposal_id, actor, "retry_approved", {})
            return Transitioned(await self.enqueue_effects(db, row, at))

    @finish_even_if_cancelled
    async def resolve_reconciliation(
        self, proposal_id: str, *, actor: str, outcome: Outcome, note: str, now: datetime
    ) -> TransitionResult:
        if outcome.kind not in ("succeeded", "terminal_failure"):
            raise ValueError(
                f"outcome: got {outcome.kind!r}; a person resolves an uncertain execution as "
                "'succeeded' or 'terminal_failure'"
            )
        status, detail = OUTCOME_STATUS[outcome.kind], outcome_json(outcome)
        at = aware(now, field="now")
        async with self.transaction() as db:
            row = await db.fetchrow(sql.RESOLVE, proposal_id, status.value, dump_json(detail), at)
            if row is None:
                return not_reconcilable(await self.existing_proposal(db, proposal_id))
            audit: dict[str, JsonValue] = {"outcome": detail, "note": note}
            await self.append_audit(db, at, proposal_id, actor, "reconciled", audit)
            return Transitioned(await self.enqueue_effects(db, row, at))

    @finish_even_if_cancelled
    async def reclaim_abandoned(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        at, outcome = aware(now, field="now"), dump_json(outcome_json(_ABANDONED))
        async with self.transaction() as db:
            rows = await db.fetch(sql.RECLAIM_ABANDONED, at, limit, outcome)
            reclaimed = []
            for row in sorted(rows, key=lambda r: (r["lease_until"], r["id"])):
                detail = {"lease_until": row["lease_until"].astimezone(UTC).isoformat()}
                await self.append_audit(
                    db, at, row["id"], EXPIRY_ACTOR, "execution_abandoned", detail
                )
                reclaimed.append(await self.enqueue_effects(db, row, at))
            return reclaimed

    @finish_even_if_cancelled
    async def reject(
        self, proposal_id: str, *, actor: str, reason: str, now: datetime
    ) -> TransitionResult:
        at = aware(now, field="now")
        async with self.transaction() as db:
            row = await db.fetchrow(sql.REJECT, proposal_id, actor, at, reason)
            if row is None:
                return refusal(await self.existing_proposal(db, proposal_id), at, None)
            await self.append_audit(db, at, proposal_id, actor, "rejected", {"reason": reason})
            return Transitioned(await self.enqueue_effects(db, row, at))

    @finish_even_if_cancelled
    async def supersede(
        self, old_id: str, new: NewProposal, *, actor: str, now: datetime
    ) -> TransitionResult:
        check_edit(old_id, new, actor=actor)
        at, args = aware(now, field="now"), new_proposal_args(new)
        async with self.transaction() as db:
            row = await db.fetchrow(sql.SUPERSEDE, old_id, new.id, actor, at)
            if row is None:
                return refusal(await self.existing_proposal(db, old_id), at, None)
            old = await self.enqueue_effects(db, row, at)
            await self.append_audit(db, at, old_id, actor, "superseded", superseded_detail(new))
            inserted = await db.fetchrow(sql.INSERT_PROPOSAL, *args)
            if inserted is None:  # the agent used this submission key: undo the transition
                key = (new.agent, new.submission_key)
                found = await db.fetchrow(sql.SELECT_BY_SUBMISSION_KEY, *key)
                assert found is not None  # the row whose unique key refused the insert
                raise IdempotencyConflict(proposal_from_record(found))
            edit = edited_detail(old, new)
            return Transitioned(await self._submitted(db, new, inserted, edit))

    @finish_even_if_cancelled
    async def record_outcome(
        self, proposal_id: str, outcome: Outcome, *, now: datetime
    ) -> Proposal:
        status, detail = OUTCOME_STATUS[outcome.kind], outcome_json(outcome)
        at = aware(now, field="now")
        async with self.transaction() as db:
            row = await db.fetchrow(
                sql.RECORD_OUTCOME, proposal_id, status.value, dump_json(detail), at
            )
            if row is None:
                current = await self.existing_proposal(db, proposal_id)
                raise InvalidTransition(
                    f"proposal {proposal_id!r} is {current.status.value!r}, not 'executing': "
                    f"an outcome ({outcome.kind!r}) can only be recorded while executing"
                )
            await self.append_audit(db, at, proposal_id, EXECUTOR_ACTOR, "outcome", detail)
            return await self.enqueue_effects(db, row, at)

    @finish_even_if_cancelled
    async def expire_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        at = aware(now, field="now")
        async with self.transaction() as db:
            rows = await db.fetch(sql.EXPIRE_DUE, at, limit)
            expired = []
            for row in sorted(rows, key=lambda r: (r["expires_at"], r["id"])):
                proposal = await self.enqueue_effects(db, row, at)
                assert proposal.expires_at is not None  # only proposals with an expiry expire
                detail = {"expires_at": proposal.expires_at.isoformat()}
                await self.append_audit(db, at, proposal.id, EXPIRY_ACTOR, "expired", detail)
                expired.append(proposal)
            return expired


async def _cannot_listen() -> asyncpg.Connection[asyncpg.Record]:
    raise StoreUnavailable("this store was built without a way to listen; open it with open()")
