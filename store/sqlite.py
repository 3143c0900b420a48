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
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import JsonValue

from contracts.outcomes import NeedsReconciliation, Outcome
from store import sqlite_reminders
from store.audit import entry_hash, verify_chain
from store.base import (
    AuditEntry,
    AuditHead,
    AuditReport,
    Delivery,
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
from store.connector import Array, Dialect, load_queries
from store.connector import Row as AnyRow
from store.delegations import Delegations
from store.digests import Digests
from store.edits import check_edit, edited_detail, superseded_detail
from store.effects import effects_of, lane_of
from store.escalation_store import Escalations
from store.group_commit import GroupCommit
from store.lifecycle import INITIAL, OUTCOME_STATUS, Status
from store.migrate import Migration, MigrationError, load_migrations, pending_migrations
from store.rows import (
    audit_entry_from_row,
    db_time,
    delivery_from_row,
    dump_json,
    from_db_time,
    new_proposal_params,
    outcome_json,
    proposal_from_row,
)
from store.shield import finish_even_if_cancelled
from store.sqlite_approvals import approve, with_approvals
from store.standing import policy_detail
from store.standing_rules import StandingRules
from store.verdicts import check_head, not_reconcilable, refusal

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

#: The last entry of the audit chain (seq 0 and the genesis hash when empty).
SELECT_AUDIT_HEAD = "SELECT seq, hash FROM audit_head WHERE id = 1"

#: Append one audit entry; triggers check it follows the head and move the head.
INSERT_AUDIT_ENTRY = """
INSERT INTO audit_log (seq, at, proposal_id, actor, event, detail, prev_hash, hash)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING *
"""

#: One effect of a transition, to be delivered by the outbox worker.
INSERT_OUTBOX = """
INSERT INTO outbox (proposal_id, effect, lane, status, created_at, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?)
"""

#: Lease up to :limit due entries, each the first undelivered one of its proposal and lane.
CLAIM_DELIVERIES = """
UPDATE outbox SET leased_until = :lease, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM outbox AS o
    WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL
      AND o.next_attempt_at <= :now
      AND (o.leased_until IS NULL OR o.leased_until <= :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox AS e
          WHERE e.proposal_id = o.proposal_id AND e.lane = o.lane AND e.id < o.id
            AND e.delivered_at IS NULL AND e.abandoned_at IS NULL)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
)
RETURNING *
"""

#: Delivered.
COMPLETE_DELIVERY = "UPDATE outbox SET delivered_at = ?, leased_until = NULL WHERE id = ?"

#: Not delivered this time: release the lease and say when to try again.
RETRY_DELIVERY = """
UPDATE outbox SET next_attempt_at = ?, leased_until = NULL, last_error = ? WHERE id = ?
"""

#: Given up.
ABANDON_DELIVERY = """
UPDATE outbox SET abandoned_at = ?, leased_until = NULL, last_error = ? WHERE id = ?
RETURNING proposal_id, effect, attempts
"""

#: Entries still to deliver.
COUNT_PENDING_DELIVERIES = (
    "SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL"
)

#: The whole audit log in chain order.
SELECT_AUDIT_LOG = "SELECT * FROM audit_log ORDER BY seq"

#: One proposal's audit entries in chain order.
SELECT_PROPOSAL_AUDIT_LOG = "SELECT * FROM audit_log WHERE proposal_id = ? ORDER BY seq"

#: Who writes the audit entries that no person or agent caused.
POLICY_ACTOR = "policy"
EXPIRY_ACTOR = "expiry"
EXECUTOR_ACTOR = "executor"
SLACK_ACTOR = "slack"
OUTBOX_ACTOR = "outbox"

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


class SqliteStore:
    """A Store on one SQLite file. Create it with :meth:`open`."""

    def __init__(
        self, db: aiosqlite.Connection, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self._db = db
        self._lock = asyncio.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._closed = False
        self._escalations: Escalations | None = None
        #: the audit head as this write transaction last moved it; None: read it from the table
        self._head: tuple[int, str] | None = None
        self._writes = GroupCommit(db, self._lock, failure=_translated, reset=self._forget_head)

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

    def _forget_head(self) -> None:
        self._head = None

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
        """A transaction for the verbs written over the connector (store/connector.py)."""
        async with self.transaction(write=write) as db:
            yield SqliteTx(self, db)

    async def one(self, db: aiosqlite.Connection, sql: str, params: Any) -> Row | None:
        """The first row ``sql`` returns inside ``db``'s transaction, or None."""
        rows = list(await db.execute_fetchall(sql, params))
        return rows[0] if rows else None

    async def existing_proposal(self, db: aiosqlite.Connection, proposal_id: str) -> Proposal:
        """The proposal with its approvals, read inside ``db``'s transaction; ProposalNotFound."""
        row = await self.one(db, SELECT_PROPOSAL, (proposal_id,))
        if row is None:
            raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
        [proposal] = await with_approvals(db, [proposal_from_row(row)])
        return proposal

    async def append_audit(
        self,
        db: aiosqlite.Connection,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> AuditEntry:
        """Append one entry after the head of the chain, inside the caller's transaction.

        The head is read once per batch of writes and then followed in memory: nobody else can
        append while this transaction holds the write lock (group_commit resets it between
        batches and after a writer that failed).
        """
        if self._head is None:
            head = await self.one(db, SELECT_AUDIT_HEAD, ())
            if head is None:
                raise StoreError("the audit head row is missing; the database was altered by hand")
            self._head = (int(head["seq"]), str(head["hash"]))
        seq, prev_hash = self._head[0] + 1, self._head[1]
        at_text, detail_text = db_time(at, field="now"), dump_json(detail)
        digest = entry_hash(
            prev_hash,
            seq=seq,
            at=from_db_time(at_text),
            proposal_id=proposal_id,
            actor=actor,
            event=event,
            detail=json.loads(detail_text),  # hash exactly what is stored
        )
        params = (seq, at_text, proposal_id, actor, event, detail_text, prev_hash, digest)
        self._head = None  # unknown until the INSERT succeeds
        row = await self.one(db, INSERT_AUDIT_ENTRY, params)
        assert row is not None  # RETURNING of an INSERT that did not fail
        self._head = (seq, digest)
        return audit_entry_from_row(row)

    async def enqueue_effects(self, db: aiosqlite.Connection, row: Row, now: datetime) -> Proposal:
        """Write the outbox entries of the status ``row`` just entered; return the proposal."""
        [proposal] = await with_approvals(db, [proposal_from_row(row)])
        at = db_time(now, field="now")
        for effect in effects_of(proposal):
            params = (proposal.id, effect.value, lane_of(effect), proposal.status.value, at, at)
            await db.execute(INSERT_OUTBOX, params)
        return proposal

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
                [existing] = await with_approvals(db, [proposal_from_row(found)])
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
            return await with_approvals(db, [proposal_from_row(row) for row in rows])

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
            return await with_approvals(db, [proposal_from_row(row) for row in rows])

    @finish_even_if_cancelled
    async def find_submission(self, agent: str, submission_key: str) -> Proposal | None:
        async with self._reading() as db:
            row = await self.one(db, SELECT_BY_SUBMISSION_KEY, (agent, submission_key))
            if row is None:
                return None
            [proposal] = await with_approvals(db, [proposal_from_row(row)])
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
            [proposal] = await with_approvals(db, [proposal_from_row(row)])
            return proposal

    @finish_even_if_cancelled
    async def claim_for_execution(
        self,
        proposal_id: str,
        *,
        actor: str,
        now: datetime,
        binding_hash: str,
        lease_until: datetime,
    ) -> TransitionResult:
        return await approve(
            self,
            proposal_id,
            actor=actor,
            now=now,
            binding_hash=binding_hash,
            lease_until=lease_until,
        )

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

    @finish_even_if_cancelled
    async def remind_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        return await sqlite_reminders.remind_due(self, now=now, limit=limit)

    @finish_even_if_cancelled
    async def extend(
        self, proposal_id: str, *, actor: str, until: datetime, now: datetime
    ) -> TransitionResult:
        return await sqlite_reminders.extend(self, proposal_id, actor=actor, until=until, now=now)

    @finish_even_if_cancelled
    async def claim_deliveries(
        self, *, now: datetime, limit: int, lease: timedelta
    ) -> list[Delivery]:
        if limit < 1:
            raise ValueError(f"limit: got {limit}; expected a positive number of entries")
        params = {
            "now": db_time(now, field="now"),
            "lease": db_time(now + lease, field="now"),
            "limit": limit,
        }
        async with self.transaction(write=True) as db:
            rows = await db.execute_fetchall(CLAIM_DELIVERIES, params)
            return sorted((delivery_from_row(row) for row in rows), key=lambda d: d.id)

    @finish_even_if_cancelled
    async def complete_delivery(self, delivery_id: int, *, now: datetime) -> None:
        async with self.transaction(write=True) as db:
            await db.execute(COMPLETE_DELIVERY, (db_time(now, field="now"), delivery_id))

    @finish_even_if_cancelled
    async def retry_delivery(self, delivery_id: int, *, at: datetime, error: str) -> None:
        async with self.transaction(write=True) as db:
            await db.execute(RETRY_DELIVERY, (db_time(at, field="at"), error[:2000], delivery_id))

    @finish_even_if_cancelled
    async def abandon_delivery(self, delivery_id: int, *, now: datetime, error: str) -> None:
        async with self.transaction(write=True) as db:
            params = (db_time(now, field="now"), error[:2000], delivery_id)
            row = await self.one(db, ABANDON_DELIVERY, params)
            if row is not None:
                detail = {"effect": row["effect"], "attempts": row["attempts"], "error": error}
                proposal_id = row["proposal_id"]
                await self.append_audit(
                    db, now, proposal_id, OUTBOX_ACTOR, "delivery_abandoned", detail
                )

    @finish_even_if_cancelled
    async def pending_deliveries(self) -> int:
        async with self.transaction(write=False) as db:
            row = await self.one(db, COUNT_PENDING_DELIVERIES, ())
            assert row is not None
            return int(row[0])

    @finish_even_if_cancelled
    async def record_event(
        self,
        proposal_id: str | None,
        *,
        actor: str,
        event: str,
        detail: dict[str, JsonValue],
        now: datetime,
    ) -> AuditEntry:
        async with self.transaction(write=True) as db:
            return await self.append_audit(db, now, proposal_id, actor, event, detail)

    @finish_even_if_cancelled
    async def audit_log(self, proposal_id: str | None = None) -> list[AuditEntry]:
        async with self.transaction(write=False) as db:
            if proposal_id is None:
                rows = await db.execute_fetchall(SELECT_AUDIT_LOG)
            else:
                rows = await db.execute_fetchall(SELECT_PROPOSAL_AUDIT_LOG, (proposal_id,))
            return [audit_entry_from_row(row) for row in rows]

    @finish_even_if_cancelled
    async def verify_audit(self) -> AuditReport:
        """Check the hash chain, then compare its last entry with the audit head.

        The chain alone shows changed, reordered and missing entries up to its last entry; it
        cannot show that entries after it were deleted. The head row, moved by the database in
        the transaction of every append, still names the true last entry, so a log that ends
        before the head has lost its tail (reported as the first missing entry).
        """
        async with self.transaction(write=False) as db:
            entries = [audit_entry_from_row(r) for r in await db.execute_fetchall(SELECT_AUDIT_LOG)]
            head = await self.one(db, SELECT_AUDIT_HEAD, ())
        stored_head = None if head is None else (int(head["seq"]), str(head["hash"]))
        return check_head(verify_chain(entries), entries, stored_head)

    @finish_even_if_cancelled
    async def audit_head(self) -> AuditHead:
        async with self.transaction(write=False) as db:
            head = await self.one(db, SELECT_AUDIT_HEAD, ())
        if head is None:
            raise StoreError("the audit head row is missing; the database was altered by hand")
        return AuditHead(seq=int(head["seq"]), hash=str(head["hash"]))


class SqliteTx:
    """One SQLite transaction as the connector's Tx (store/connector.py): named queries with
    named parameters, times as fixed-width UTC text, arrays as JSON text."""

    dialect: Dialect = "sqlite"

    def __init__(self, store: SqliteStore, db: aiosqlite.Connection) -> None:
        self._store = store
        self._db = db
        self._queries = load_queries("sqlite")

    @staticmethod
    def param(name: str, value: Any) -> Any:
        if isinstance(value, datetime):
            return db_time(value, field=name)
        if isinstance(value, Array):
            return dump_json(list(value))
        return value

    def _bound(self, query: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        named = self._queries[query]
        values = {key: self.param(key, value) for key, value in named.named(params).items()}
        return named.text, values

    async def one(self, query: str, /, **params: Any) -> AnyRow | None:
        rows = list(await self._db.execute_fetchall(*self._bound(query, params)))
        return rows[0] if rows else None

    async def all(self, query: str, /, **params: Any) -> list[AnyRow]:
        return list(await self._db.execute_fetchall(*self._bound(query, params)))

    async def execute(self, query: str, /, **params: Any) -> None:
        await self._db.execute(*self._bound(query, params))

    async def append_audit(
        self,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> AuditEntry:
        return await self._store.append_audit(self._db, at, proposal_id, actor, event, detail)

    async def existing_proposal(self, proposal_id: str) -> Proposal:
        return await self._store.existing_proposal(self._db, proposal_id)

    async def with_approvals(
        self, proposals: Sequence[Proposal], *, every: bool = False
    ) -> list[Proposal]:
        return await with_approvals(self._db, proposals, every=every)

    async def enqueue_effects(self, row: AnyRow, now: datetime) -> Proposal:
        return await self._store.enqueue_effects(self._db, row, now)  # type: ignore[arg-type]
