"""The SQLite backend of the Store protocol.

One aiosqlite connection per store, WAL journal, ``synchronous=FULL`` unless asked otherwise,
foreign keys on. Every write is one ``BEGIN IMMEDIATE`` transaction taken under an asyncio lock,
so transitions and their audit entries commit together and the audit chain stays linear, also
when several processes share the file. Every transition is a compare-and-set (``UPDATE ... WHERE
status = ... RETURNING *``); when no row comes back, the proposal is re-read to say why.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import JsonValue

from contracts.outcomes import NeedsReconciliation, Outcome
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
from store.group_commit import GroupCommit
from store.lifecycle import INITIAL, OUTCOME_STATUS, Status
from store.migrate import Migration, MigrationError, load_migrations, pending_migrations
from store.outbox import OutboxVerbs
from store.reminders import ReminderVerbs
from store.rows import (
    db_time,
    dump_json,
    new_proposal_params,
    outcome_json,
    proposal_from_row,
)
from store.shield import finish_even_if_cancelled
from store.sqlite_tx import FollowedHead, SqliteTx
from store.standing import policy_detail
from store.standing_rules import StandingRules
from store.verdicts import not_reconcilable, refusal

__all__ = ["SqliteStore", "apply_migrations"]

Row = sqlite3.Row

#: Bootstraps the table that records applied migrations (every other table is a migration).
CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT
"""

#: A migration that rebuilds a table says so with this line; the runner then turns foreign keys
#: off around it (SQLite ignores the pragma inside a transaction) and checks them before COMMIT.
FOREIGN_KEYS_OFF = "-- countersign-migrate: foreign_keys=off"

#: The versions already applied.
SELECT_APPLIED_VERSIONS = "SELECT version FROM schema_migrations"

#: A new proposal; no row back means the agent already used this submission key.
INSERT_PROPOSAL = """
INSERT INTO proposals (
    id, agent, submission_key, submission_fingerprint, requested_by, run_id, operation, request,
    arguments, preview, binding_hash, agent_reason, callback_url, rule_id, decision, policy_note,
    approver_roles, channel, status, created_at, expires_at, updated_at, lease_until, risk,
    quorum, supersedes, edited_by, remind_at, standing_rule_id, review_sampled, delegation_id
) VALUES (
    :id, :agent, :submission_key, :submission_fingerprint, :requested_by, :run_id, :operation,
    :request, :arguments, :preview, :binding_hash, :agent_reason, :callback_url, :rule_id,
    :decision, :policy_note, :approver_roles, :channel, :status, :created_at, :expires_at,
    :updated_at, :lease_until, :risk, :quorum, :supersedes, :edited_by, :remind_at,
    :standing_rule_id, :review_sampled, :delegation_id
)
ON CONFLICT (agent, submission_key) DO NOTHING
RETURNING *
"""

#: The proposal an agent stored under a submission key.
SELECT_BY_SUBMISSION_KEY = "SELECT * FROM proposals WHERE agent = ? AND submission_key = ?"

#: One proposal by id.
SELECT_PROPOSAL = "SELECT * FROM proposals WHERE id = ?"

#: Remember the Slack message showing the proposal (allowed in any status).
UPDATE_MESSAGE = """
UPDATE proposals SET slack_channel = ?, slack_ts = ?, updated_at = ? WHERE id = ? RETURNING *
"""

#: A person retries an uncertain execution: needs_reconciliation -> executing, with a new lease.
RETRY = """
UPDATE proposals SET status = 'executing', updated_at = ?, lease_until = ?
WHERE id = ? AND status = 'needs_reconciliation'
RETURNING *
"""

#: A person records what really happened: needs_reconciliation -> succeeded or failed.
RESOLVE = """
UPDATE proposals SET status = ?, outcome = ?, updated_at = ?
WHERE id = ? AND status = 'needs_reconciliation'
RETURNING *
"""

#: Executions whose executor did not record an outcome in time -> needs_reconciliation.
RECLAIM_ABANDONED = """
UPDATE proposals SET status = 'needs_reconciliation', outcome = :outcome, updated_at = :now
WHERE id IN (
    SELECT id FROM proposals
    WHERE status = 'executing' AND lease_until <= :now
    ORDER BY lease_until, id
    LIMIT :limit
) AND status = 'executing'
RETURNING *
"""

#: The rejection: pending and unexpired -> rejected, with the reason.
REJECT = """
UPDATE proposals
SET status = 'rejected', decided_by = ?, decided_at = ?, decision_note = ?, updated_at = ?
WHERE id = ? AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?)
RETURNING *
"""

#: An edit replaces a pending, unexpired proposal: pending -> superseded, naming the edit (not
#: yet inserted; the same transaction inserts it) and the editor.
SUPERSEDE = """
UPDATE proposals
SET status = 'superseded', superseded_by = ?, decided_by = ?, decided_at = ?, updated_at = ?
WHERE id = ? AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?)
RETURNING *
"""

#: The outcome of an execution: executing -> the outcome's status.
RECORD_OUTCOME = """
UPDATE proposals SET status = ?, outcome = ?, updated_at = ?
WHERE id = ? AND status = 'executing'
RETURNING *
"""

#: The expiry sweep: up to ``limit`` overdue pending proposals -> expired, oldest expiry first.
EXPIRE_DUE = """
UPDATE proposals SET status = 'expired', updated_at = :now
WHERE id IN (
    SELECT id FROM proposals
    WHERE status = 'pending' AND expires_at <= :now
    ORDER BY expires_at, id
    LIMIT :limit
) AND status = 'pending'
RETURNING *
"""

#: Pending proposals, riskiest first, then soonest expiry (App Home, the slash command); the
#: index proposals_pending_by_risk holds them in this order.
SELECT_PENDING = """
SELECT * FROM proposals WHERE status = 'pending' ORDER BY risk_rank, expires_at, id LIMIT ?
"""

#: One agent's pending proposals, in the same order.
SELECT_PENDING_OF_AGENT = """
SELECT * FROM proposals WHERE status = 'pending' AND agent = ?
ORDER BY risk_rank, expires_at, id LIMIT ?
"""

#: How many proposals of one agent wait for a decision (the per-agent pending limit).
COUNT_PENDING = "SELECT count(*) FROM proposals WHERE status = 'pending' AND agent = ?"

#: Pending proposals per agent (App Home and /countersign list give each agent a share).
COUNT_PENDING_BY_AGENT = """
SELECT agent, count(*) AS pending FROM proposals WHERE status = 'pending' GROUP BY agent
"""

#: A person's decisions, latest first.
SELECT_DECIDED_BY = """
SELECT * FROM proposals WHERE decided_by = ? ORDER BY decided_at DESC, id LIMIT ?
"""

#: Who writes the audit entries that no person or agent caused.
POLICY_ACTOR = "policy"
EXPIRY_ACTOR = "expiry"
EXECUTOR_ACTOR = "executor"
SLACK_ACTOR = "slack"

#: The audit event the policy's own decision adds to "submitted" (ask adds none).
_POLICY_EVENT = {Status.EXECUTING: "auto_approved", Status.DENIED: "denied"}


async def apply_migrations(db: aiosqlite.Connection, migrations: Sequence[Migration]) -> list[int]:
    """Apply the missing ``migrations``, each in one transaction with its record. Returns versions.

    A migration marked with :data:`FOREIGN_KEYS_OFF` (a table rebuild: create, copy, drop, rename)
    runs with foreign keys off, and commits only if ``PRAGMA foreign_key_check`` finds nothing.

    The record is inserted first: when another connection applied the same version meanwhile,
    its primary key refuses ours and this migration is skipped.
    """
    await db.execute(CREATE_SCHEMA_MIGRATIONS)
    applied = {row[0] for row in await db.execute_fetchall(SELECT_APPLIED_VERSIONS)}
    done = []
    for migration in pending_migrations(migrations, applied):
        name = migration.name.replace("'", "''")  # a SQL string literal
        record = (
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES "
            f"({migration.version:d}, '{name}', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));"
        )
        rebuilds = FOREIGN_KEYS_OFF in migration.sql
        if rebuilds:  # only outside a transaction does this pragma take effect
            await db.execute("PRAGMA foreign_keys = OFF")
        try:
            await db.executescript(f"BEGIN IMMEDIATE;\n{record}\n{migration.sql}\n;")
            broken = list(await db.execute_fetchall("PRAGMA foreign_key_check"))
            if broken:
                raise sqlite3.IntegrityError(
                    f"migration {migration.version:04d}_{migration.name} leaves "
                    f"{len(broken)} row(s) whose foreign keys point nowhere (first: "
                    f"{tuple(broken[0])})"
                )
            await db.execute("COMMIT")
        except sqlite3.Error:
            if db.in_transaction:
                await db.execute("ROLLBACK")
            again = {row[0] for row in await db.execute_fetchall(SELECT_APPLIED_VERSIONS)}
            if migration.version in again:
                continue
            raise
        finally:
            if rebuilds:
                await db.execute("PRAGMA foreign_keys = ON")
        done.append(migration.version)
    return done


def _translated(error: sqlite3.Error) -> StoreError:
    """The store's error for a driver error."""
    if isinstance(error, sqlite3.IntegrityError):
        return StoreError(f"the database refused the change: {error}")
    return StoreUnavailable(f"SQLite: {error}")


class SqliteStore(ApprovalVerbs, ReminderVerbs, AuditVerbs, OutboxVerbs):
    """A Store on one SQLite file. Create it with :meth:`open`."""

    def __init__(
        self, db: aiosqlite.Connection, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self._db = db
        self._lock = asyncio.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._closed = False
        self._escalations: Escalations | None = None
        #: the audit head as the batch of writes moved it (store/sqlite_tx.py)
        self._head = FollowedHead()
        self._writes = GroupCommit(db, self._lock, failure=_translated, reset=self._head.forget)

    def escalations(self) -> Escalations:
        """The escalations kept in this database, sharing its transactions and audit chain."""
        if self._escalations is None:
            self._escalations = Escalations(self)
        return self._escalations

    def standing(self) -> StandingRules:
        """Standing rules and reviews in this database, in its transactions and audit chain."""
        return StandingRules(self)

    def delegations(self) -> Delegations:
        """Delegations from Slack in this database, in its transactions and audit chain."""
        return Delegations(self)

    def digests(self) -> Digests:
        """Digests of similar proposals in this database, in its transactions and audit chain."""
        return Digests(self)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        durable: bool = True,
        busy_timeout_ms: int = 5000,
        clock: Callable[[], datetime] | None = None,
    ) -> SqliteStore:
        """Open (creating if needed) and migrate the database at ``path``.

        ``durable=False`` uses ``synchronous=NORMAL``: faster, and a power cut may lose the last
        commits (never corrupt the file). ``clock`` stamps the one verb without a ``now``
        (attach_message).
        """
        try:
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"cannot open SQLite database {str(path)!r}: {error}") from error
        try:
            db.row_factory = sqlite3.Row
            await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms):d}")
            await db.execute("PRAGMA foreign_keys = ON")
            [(mode,)] = await db.execute_fetchall("PRAGMA journal_mode = WAL")
            if mode != "wal" and str(path) != ":memory:":
                raise StoreUnavailable(
                    f"SQLite database {str(path)!r}: journal mode is {mode!r}, expected 'wal'"
                )
            await db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            await apply_migrations(db, load_migrations("sqlite"))
        except BaseException as error:
            await db.close()
            if isinstance(error, sqlite3.Error | MigrationError):
                raise StoreUnavailable(f"SQLite database {str(path)!r}: {error}") from error
            raise
        return cls(db, clock=clock)

    async def listen(self, on_change: Callable[[str], None]) -> None:
        """Nothing to do: one process uses a SQLite file, and it notifies its own waiters."""

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._writes.close(StoreUnavailable("the store is closed"))
            async with self._lock:
                await self._db.close()

    @property
    def group_commit(self) -> GroupCommit:
        """How writes were batched into transactions (``batches``, ``writes``)."""
        return self._writes

    # --- transactions -----------------------------------------------------------------------
    # transaction, one, existing_proposal, append_audit and enqueue_effects are what the
    # feature stores sharing this connection and audit chain (sqlite_*.py) build their verbs
    # with; PostgresStore has the same names. They are not part of the Store protocol.

    @asynccontextmanager
    async def transaction(self, *, write: bool) -> AsyncIterator[aiosqlite.Connection]:
        """One transaction, serialized with every other use of the connection.

        Driver errors are translated here: none leaves the store. Write transactions are
        batched with concurrent ones into one COMMIT (store/group_commit.py).
        """
        if write:
            try:
                async with self._writes.transaction() as db:
                    yield db
            except sqlite3.Error as error:
                raise _translated(error) from error
            return
        async with self._lock:
            if self._closed:  # checked under the lock: close() may have run while we waited
                raise StoreUnavailable("the store is closed")
            try:
                if self._db.in_transaction:  # left open by a cancelled task: nothing to keep
                    await self._db.execute("ROLLBACK")
                await self._db.execute("BEGIN")  # writes go through group commit above
                try:
                    yield self._db
                    await self._db.execute("COMMIT")
                except BaseException:
                    # Best effort: after a cancellation during COMMIT the transaction may have
                    # ended already, and a failing ROLLBACK must not replace the real error
                    # (least of all a CancelledError, which must reach the task).
                    if self._db.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            await self._db.execute("ROLLBACK")
                    raise
            except sqlite3.IntegrityError as error:
                raise StoreError(f"the database refused the change: {error}") from error
            except sqlite3.Error as error:
                raise StoreUnavailable(f"SQLite: {error}") from error

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection for reads that need no snapshot across statements: each statement
        reads committed data on its own (autocommit), sparing a BEGIN and a COMMIT. Used for
        one proposal (its row, then its approvals, which are append-only) and lookups by key."""
        async with self._lock:
            if self._closed:
                raise StoreUnavailable("the store is closed")
            try:
                if self._db.in_transaction:  # left open by a cancelled task: nothing to keep
                    await self._db.execute("ROLLBACK")
                yield self._db
            except sqlite3.Error as error:
                raise _translated(error) from error

    @asynccontextmanager
    async def tx(self, *, write: bool) -> AsyncIterator[SqliteTx]:
        """A write transaction of the group commit, or (not ``write``) the connection in
        autocommit, each statement reading what has committed (store/backend.py)."""
        if write:
            async with self.transaction(write=True) as db:
                yield SqliteTx(db, self._head)
        else:
            async with self._reading() as db:
                yield SqliteTx(db, self._head)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteTx]:
        """A read transaction (BEGIN ... COMMIT): its statements see one snapshot."""
        async with self.transaction(write=False) as db:
            yield SqliteTx(db, self._head)

    def lone_write(self) -> contextlib.AbstractAsyncContextManager[SqliteTx]:
        """A write of the group commit (one statement alone would cost its own COMMIT)."""
        return self.tx(write=True)

    async def one(self, db: aiosqlite.Connection, sql: str, params: Any) -> Row | None:
        """The first row ``sql`` returns inside ``db``'s transaction, or None."""
        rows = list(await db.execute_fetchall(sql, params))
        return rows[0] if rows else None

    async def existing_proposal(self, db: aiosqlite.Connection, proposal_id: str) -> Proposal:
        """The proposal with its approvals, read inside ``db``'s transaction; ProposalNotFound."""
        return await SqliteTx(db, self._head).existing_proposal(proposal_id)

    async def append_audit(
        self,
        db: aiosqlite.Connection,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> AuditEntry:
        """Append one entry after the head of the chain, inside the caller's transaction."""
        return await SqliteTx(db, self._head).append_audit(at, proposal_id, actor, event, detail)

    async def enqueue_effects(self, db: aiosqlite.Connection, row: Row, now: datetime) -> Proposal:
        """Write the outbox entries of the status ``row`` just entered; return the proposal."""
        return await SqliteTx(db, self._head).enqueue_effects(row, now)

    async def with_approvals(
        self, db: aiosqlite.Connection, proposals: Sequence[Proposal], *, every: bool = False
    ) -> list[Proposal]:
        """``proposals`` with their approvals, read inside ``db``'s transaction."""
        return await SqliteTx(db, self._head).with_approvals(proposals, every=every)

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
        params = new_proposal_params(new)
        async with self.transaction(write=True) as db:
            row = await self.one(db, INSERT_PROPOSAL, params)
            if row is None:  # the agent used this submission key before
                key = (new.agent, new.submission_key)
                found = await self.one(db, SELECT_BY_SUBMISSION_KEY, key)
                assert found is not None  # the row whose unique key refused the insert
                [existing] = await self.with_approvals(db, [proposal_from_row(found)])
                if existing.submission_fingerprint != new.submission_fingerprint:
                    raise IdempotencyConflict(existing)
                return existing, False
            return await self._submitted(db, new, row), True

    async def _submitted(
        self,
        db: aiosqlite.Connection,
        new: NewProposal,
        row: Row,
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
        async with self._reading() as db:
            return await self.existing_proposal(db, proposal_id)

    @finish_even_if_cancelled
    async def pending_proposals(
        self, *, limit: int = 100, agent: str | None = None
    ) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        async with self.transaction(write=False) as db:
            if agent is None:
                rows = await db.execute_fetchall(SELECT_PENDING, (limit,))
            else:
                rows = await db.execute_fetchall(SELECT_PENDING_OF_AGENT, (agent, limit))
            return await self.with_approvals(db, [proposal_from_row(row) for row in rows])

    @finish_even_if_cancelled
    async def count_pending(self, agent: str) -> int:
        async with self._reading() as db:
            row = await self.one(db, COUNT_PENDING, (agent,))
            return 0 if row is None else int(row[0])

    @finish_even_if_cancelled
    async def pending_by_agent(self) -> dict[str, int]:
        async with self._reading() as db:
            rows = await db.execute_fetchall(COUNT_PENDING_BY_AGENT, ())
            return {str(row["agent"]): int(row["pending"]) for row in rows}

    @finish_even_if_cancelled
    async def decisions_by(self, user: str, *, limit: int = 10) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        async with self.transaction(write=False) as db:
            rows = await db.execute_fetchall(SELECT_DECIDED_BY, (user, limit))
            return await self.with_approvals(db, [proposal_from_row(row) for row in rows])

    @finish_even_if_cancelled
    async def find_submission(self, agent: str, submission_key: str) -> Proposal | None:
        async with self._reading() as db:
            row = await self.one(db, SELECT_BY_SUBMISSION_KEY, (agent, submission_key))
            if row is None:
                return None
            [proposal] = await self.with_approvals(db, [proposal_from_row(row)])
            return proposal

    @finish_even_if_cancelled
    async def attach_message(self, proposal_id: str, channel: str, ts: str) -> Proposal:
        now = self._clock()
        async with self.transaction(write=True) as db:
            row = await self.one(db, UPDATE_MESSAGE, (channel, ts, db_time(now), proposal_id))
            if row is None:
                raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
            detail = {"channel": channel, "ts": ts}
            await self.append_audit(db, now, proposal_id, SLACK_ACTOR, "posted_to_slack", detail)
            [proposal] = await self.with_approvals(db, [proposal_from_row(row)])
            return proposal

    @finish_even_if_cancelled
    async def retry_execution(
        self, proposal_id: str, *, actor: str, now: datetime, lease_until: datetime
    ) -> TransitionResult:
        at, lease = db_time(now, field="now"), db_time(lease_until, field="lease_until")
        async with self.transaction(write=True) as db:
            row = await self.one(db, RETRY, (at, lease, proposal_id))
            if row is None:
                return not_reconcilable(await self.existing_proposal(db, proposal_id))
            await self.append_audit(db, now, proposal_id, actor, "retry_approved", {})
            return Transitioned(await self.enqueue_effects(db, row, now))

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
        params = (status.value, dump_json(detail), db_time(now, field="now"), proposal_id)
        async with self.transaction(write=True) as db:
            row = await self.one(db, RESOLVE, params)
            if row is None:
                return not_reconcilable(await self.existing_proposal(db, proposal_id))
            audit: dict[str, JsonValue] = {"outcome": detail, "note": note}
            await self.append_audit(db, now, proposal_id, actor, "reconciled", audit)
            return Transitioned(await self.enqueue_effects(db, row, now))

    @finish_even_if_cancelled
    async def reclaim_abandoned(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        outcome = NeedsReconciliation(
            detail="the process executing it stopped before recording an outcome; the effect "
            "may or may not have happened",
            correlation_id="lease-expired",
        )
        params = {
            "now": db_time(now, field="now"),
            "limit": limit,
            "outcome": dump_json(outcome_json(outcome)),
        }
        async with self.transaction(write=True) as db:
            rows = await db.execute_fetchall(RECLAIM_ABANDONED, params)
            reclaimed = []
            for row in sorted(rows, key=lambda r: (r["lease_until"], r["id"])):
                detail = {"lease_until": row["lease_until"]}
                await self.append_audit(
                    db, now, row["id"], EXPIRY_ACTOR, "execution_abandoned", detail
                )
                reclaimed.append(await self.enqueue_effects(db, row, now))
            return reclaimed

    @finish_even_if_cancelled
    async def reject(
        self, proposal_id: str, *, actor: str, reason: str, now: datetime
    ) -> TransitionResult:
        at = db_time(now, field="now")
        async with self.transaction(write=True) as db:
            row = await self.one(db, REJECT, (actor, at, reason, at, proposal_id, at))
            if row is None:
                return refusal(await self.existing_proposal(db, proposal_id), now, None)
            await self.append_audit(db, now, proposal_id, actor, "rejected", {"reason": reason})
            return Transitioned(await self.enqueue_effects(db, row, now))

    @finish_even_if_cancelled
    async def supersede(
        self, old_id: str, new: NewProposal, *, actor: str, now: datetime
    ) -> TransitionResult:
        check_edit(old_id, new, actor=actor)
        at, params = db_time(now, field="now"), new_proposal_params(new)
        async with self.transaction(write=True) as db:
            row = await self.one(db, SUPERSEDE, (new.id, actor, at, at, old_id, at))
            if row is None:
                return refusal(await self.existing_proposal(db, old_id), now, None)
            old = await self.enqueue_effects(db, row, now)
            await self.append_audit(db, now, old_id, actor, "superseded", superseded_detail(new))
            inserted = await self.one(db, INSERT_PROPOSAL, params)
            if inserted is None:  # the agent used this submission key: undo the transition
                key = (new.agent, new.submission_key)
                found = await self.one(db, SELECT_BY_SUBMISSION_KEY, key)
                assert found is not None  # the row whose unique key refused the insert
                raise IdempotencyConflict(proposal_from_row(found))
            edit = edited_detail(old, new)
            return Transitioned(await self._submitted(db, new, inserted, edit))

    @finish_even_if_cancelled
    async def record_outcome(
        self, proposal_id: str, outcome: Outcome, *, now: datetime
    ) -> Proposal:
        status, detail = OUTCOME_STATUS[outcome.kind], outcome_json(outcome)
        params = (status.value, dump_json(detail), db_time(now, field="now"), proposal_id)
        async with self.transaction(write=True) as db:
            row = await self.one(db, RECORD_OUTCOME, params)
            if row is None:
                current = await self.existing_proposal(db, proposal_id)
                raise InvalidTransition(
                    f"proposal {proposal_id!r} is {current.status.value!r}, not 'executing': "
                    f"an outcome ({outcome.kind!r}) can only be recorded while executing"
                )
            await self.append_audit(db, now, proposal_id, EXECUTOR_ACTOR, "outcome", detail)
            return await self.enqueue_effects(db, row, now)

    @finish_even_if_cancelled
    async def expire_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        if limit < 1:  # SQLite reads a negative LIMIT as "no limit"
            raise ValueError(f"limit: got {limit}; expected a positive number of proposals")
        params = {"now": db_time(now, field="now"), "limit": limit}
        async with self.transaction(write=True) as db:
            rows = await db.execute_fetchall(EXPIRE_DUE, params)
            expired = []
            for row in sorted(rows, key=lambda r: (r["expires_at"], r["id"])):
                proposal = await self.enqueue_effects(db, row, now)
                assert proposal.expires_at is not None  # only proposals with an expiry expire
                detail = {"expires_at": proposal.expires_at.isoformat()}
                await self.append_audit(db, now, proposal.id, EXPIRY_ACTOR, "expired", detail)
                expired.append(proposal)
            return expired
