"""Rendering is pure: every render module's output is a function of its arguments alone.

Each render function runs three ways, and must give what it gives normally:

- with the clock, the environment and the file system refused (``datetime.now``, ``time.time``,
  ``os.environ``, ``open`` raise, in every module of the project and in the standard library);
- at another moment, somewhere else: the clock says 2099, the process time zone is Chatham's
  (UTC+12:45), the locale variables and the working directory differ;
- given another ``now``: then the time left until each expiry changes, and nothing else does.

Its inputs are compared before and after, so a render function that changes what it is given
fails too.
"""

from __future__ import annotations

import ast
import builtins
import copy
import datetime as datetime_module
import importlib
import inspect
import io
import json
import os
import pkgutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

import bot
from bot.render import clicks as render_clicks
from bot.render import delegations as render_delegations
from bot.render import digest as render_digest
from bot.render import digest_clicks as render_digest_clicks
from bot.render import digest_reply as render_digest_reply
from bot.render import digest_review as render_review
from bot.render import digest_table as render_digest_table
from bot.render import edit as render_edit
from bot.render import escalation as render_escalation
from bot.render import figures as render_figures
from bot.render import full as render_full
from bot.render import home as render_home
from bot.render import inert as render_inert
from bot.render import proposal as render
from bot.render import reminders as render_reminders
from bot.render import standing as render_standing
from bot.render import status as render_status
from bot.render import words as render_words
from bot.render.blocks import clip, escape, is_clipped
from bot.render.clicks import already_decided_text, refusal_text
from bot.render.digest_table import compact_table
from bot.render.edit_form import edit_form, read_request
from bot.render.replies import expiry_reply, outcome_reply, rejection_reply
from contracts.base import Preview
from contracts.standing import Grant, duration_choices
from store.audit import AuditEntry
from store.delegations import Delegation
from store.escalations import EscalationStatus
from store.proposals import Approval, Status
from store.standing import Reviewed
from tests.bot.render import test_edit as edit_inputs
from tests.bot.render.test_digest import digest, item
from tests.bot.render.test_escalation import stored
from tests.bot.render.test_proposal import INJECTION, NOW, OUTCOMES, decided, make_proposal
from tests.bot.render.test_standing import STANDING, rule

#: Every dated input expires 65 minutes after NOW (make_proposal's expiry): moving ``now`` by an
#: hour or two changes the time left shown, "in 65 minutes", to the given text.
EXPIRES = NOW + timedelta(hours=1, minutes=5)
TIME_LEFT = "in 65 minutes"
MOVES = {timedelta(hours=1): "in 5 minutes", timedelta(hours=2): "55 minutes ago"}

#: The project's own code: a render function may call into any of it.
PROJECT = ("bot", "contracts", "store")


# --- the inputs -----------------------------------------------------------------------------------


def _approved_by(*people: str) -> tuple[Approval, ...]:
    return tuple(
        Approval(approver=person, binding_hash="b" * 64, approved_at=NOW) for person in people
    )


PENDING = make_proposal(agent_reason=INJECTION)
QUORUM = make_proposal(quorum=3, approvals=_approved_by("U0ANA"), approver_roles=("finance",))
EDITED = make_proposal(
    id="cs_7jq4m2xw5hb6kf3ya2npz4drte",
    arguments={"payment_id": "pay_123", "amount_cents": 9000},
    request={"payment_id": "pay_123", "amount_cents": 9000},
    supersedes=PENDING.id,
    edited_by="U0APPROVER",
)
SUCCEEDED = decided(Status.SUCCEEDED, OUTCOMES["succeeded"])
REJECTED = decided(Status.REJECTED, decision_note="Not this one <!here>")
AUTOMATIC = make_proposal(
    decision="auto",
    status=Status.SUCCEEDED,
    outcome=OUTCOMES["succeeded"],
    expires_at=None,
    standing_rule_id="sr_0123456789abcdef0123456789abcdef",
)
DIGEST = digest(
    [
        item(1, expires_at=EXPIRES),
        item(2, expires_at=EXPIRES, quorum=2, approvals=_approved_by("U0ANA")),
        item(3, status=Status.REJECTED, decided_by="U0ANA", decision_note="no"),
        item(4, status=Status.SUCCEEDED, decided_by="U0ANA", outcome=OUTCOMES["succeeded"]),
    ]
)
DIGEST_CHANGES = [
    (
        n,
        item(n, status=status, decided_by="U0ANA", outcome=OUTCOMES.get(kind)),
        status,
    )
    for n, (kind, status) in enumerate(
        [
            ("succeeded", Status.SUCCEEDED),
            ("needs_reconciliation", Status.NEEDS_RECONCILIATION),
            ("revision_required", Status.REVISION_REQUIRED),
            ("terminal_failure", Status.FAILED),
            ("", Status.EXPIRED),
        ],
        1,
    )
]
TALLY = render_digest_clicks.Tally("approved", done=2, counted=1, already=3, refused=Counter(x=4))
DELEGATIONS = [
    Delegation(
        id=f"dl_{n:032d}",
        agent="billing-bot",
        person="U0PERSON",
        created_at=NOW - timedelta(days=1),
        expires_at=EXPIRES,
    )
    for n in range(2)
]
ESCALATION = stored(id="esc_0123456789abcdef01234567", created_at=NOW, announced_at=NOW)
TAKEN = ESCALATION.model_copy(update={"status": EscalationStatus.TAKEN, "owner": "U0OWNER"})
TRAIL = [
    AuditEntry(
        seq=1,
        at=NOW - timedelta(minutes=5),
        proposal_id=PENDING.id,
        actor="agent:billing-bot",
        event="submitted",
        detail={"decision": "ask"},
        prev_hash="0" * 64,
        hash="1" * 64,
    )
]
GRANT = Grant(
    operation="payments.refund",
    agent="billing-bot",
    rule_id="big-refunds",
    ceiling_field="amount_cents",
    ceiling=12000,
    arguments={"payment_id": "pay_123"},
    varying=("amount_cents",),
    max_uses=5,
    created_by="U0ADMIN",
    created_from=PENDING.id,
    created_at=NOW,
    expires_at=EXPIRES,
)
EDIT_PROPOSAL = edit_inputs.proposal()
EDIT_SUPERSEDED = edit_inputs.proposal(
    status=Status.SUPERSEDED,
    decided_by="U0APPROVER",
    decided_at=NOW,
    superseded_by=edit_inputs.EDIT_ID,
)
EDIT_NEW = edit_inputs.proposal(
    id=edit_inputs.EDIT_ID,
    request={**edit_inputs.STORED, "count": 300},
    supersedes=edit_inputs.PROPOSAL_ID,
    edited_by="U0APPROVER",
    preview=Preview(title="Email 300 customers"),
)


# --- the cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One call of a render function; ``now`` is passed when ``dated``; ``time_left``: the
    output shows how long until an expiry."""

    function: Callable[..., object]
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)
    dated: bool = False
    time_left: bool = False

    def __call__(self, now: datetime = NOW) -> object:
        kwargs = {**self.kwargs, "now": now} if self.dated else self.kwargs
        return self.function(*self.args, **kwargs)

    @property
    def name(self) -> str:
        return f"{self.function.__module__}.{self.function.__qualname__}"


def dated(
    function: Callable[..., object], *args: object, time_left: bool = True, **kw: Any
) -> Case:
    return Case(function, args, kw, dated=True, time_left=time_left)


def plain(function: Callable[..., object], *args: object, **kwargs: Any) -> Case:
    return Case(function, args, kwargs)


CASES: list[Case] = [
    # bot/render/proposal.py, bot/render/blocks.py, bot/render/replies.py, bot/render/clicks.py
    dated(render.proposal_message, PENDING),
    dated(
        render.proposal_message,
        EDITED,
        agent_display="Billing",
        extend_by=timedelta(minutes=30),
        allow_similar=True,
        previous=PENDING,
    ),
    dated(render.proposal_message, QUORUM),
    dated(render.proposal_message, SUCCEEDED, time_left=False),
    plain(escape, INJECTION),
    plain(clip, "x" * 5000, 3000),
    plain(is_clipped, [{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}]),
    plain(render.edit_blocks, EDITED, PENDING),
    plain(render.request_changes, PENDING.request, EDITED.request),
    plain(render.quorum_progress, QUORUM),
    plain(render.approval_recorded_text, QUORUM),
    *[
        plain(outcome_reply, decided(status, OUTCOMES[kind]))
        for kind, status in [
            ("succeeded", Status.SUCCEEDED),
            ("needs_reconciliation", Status.NEEDS_RECONCILIATION),
            ("revision_required", Status.REVISION_REQUIRED),
            ("terminal_failure", Status.FAILED),
        ]
    ],
    plain(rejection_reply, REJECTED),
    plain(expiry_reply, decided(Status.EXPIRED)),
    plain(refusal_text, "you asked for it <!here>"),
    plain(already_decided_text, REJECTED),
    plain(render.reject_modal, PENDING),
    # bot/render/clicks.py
    plain(render_clicks.click_recorded_text, PENDING.id, "approve", again=False),
    plain(render_clicks.click_recorded_text, PENDING.id, "reject", again=True),
    plain(render_clicks.click_recorded_text, "dg_1", "digest_review", again=False),
    # bot/render/delegations.py
    dated(render_delegations.minted_blocks, DELEGATIONS[0], "cs_dlg_token"),
    dated(render_delegations.delegation_list_blocks, DELEGATIONS),
    # bot/render/digest.py, digest_table.py, digest_reply.py, digest_clicks.py
    dated(render_digest.digest_message, DIGEST),
    dated(render_digest.shown_whole, DIGEST, time_left=False),
    dated(render_digest.cut_items, DIGEST, time_left=False),
    plain(render_digest_table.total_text, compact_table(DIGEST.items, {}), 2, 3),
    plain(render_digest_reply.digest_reply, DIGEST_CHANGES),
    plain(render_digest_clicks.reject_modal, DIGEST, 2),
    plain(render_digest_clicks.choose_modal, DIGEST, DIGEST.items[:2]),
    plain(render_digest_clicks.tally_text, TALLY),
    # bot/render/digest_review.py
    plain(render_review.review_modal, DIGEST, render_review.review_state(DIGEST), {}),
    # bot/render/edit.py
    plain(render_edit.edit_modal, EDIT_PROPOSAL, edit_form(edit_inputs.SCHEMA, edit_inputs.STORED)),
    plain(render_edit.superseded_reply, EDIT_SUPERSEDED, EDIT_NEW, link="https://x.example/1"),
    # bot/render/edit_form.py
    plain(read_request, edit_form(edit_inputs.SCHEMA, edit_inputs.STORED), edit_inputs.STORED, {}),
    # bot/render/escalation.py
    plain(render_escalation.escalation_message, ESCALATION),
    plain(render_escalation.escalation_reply, TAKEN, handed_back_by="U0OWNER"),
    plain(render_escalation.reannouncement_reply, ESCALATION),
    plain(render_escalation.escalation_refusal_text, TAKEN, "someone else owns it"),
    plain(render_escalation.hand_back_modal, TAKEN),
    # bot/render/figures.py
    plain(render_figures.why_asked, PENDING),
    plain(render_figures.changed_fields, {"a": 1, "b": 2}, {"a": 3}, {}),
    plain(render_figures.result_fields, {"refund_id": "re_1", "amount_cents": 12000}, {}),
    # bot/render/full.py
    plain(render_full.full_view, PENDING),
    plain(render_full.full_views, [PENDING, EDITED], title="Two proposals"),
    # bot/render/home.py
    dated(
        render_home.home_view,
        waiting=[PENDING, QUORUM],
        owned=[TAKEN],
        decisions=[SUCCEEDED, REJECTED],
        notice="Approved <!here>",
        delegations=DELEGATIONS,
        previous={EDITED.id: PENDING},
    ),
    dated(render_home.waiting_blocks, [EDITED], previous={EDITED.id: PENDING}, beyond={"a": 2}),
    dated(render_home.proposal_detail_blocks, EDITED, TRAIL, previous=PENDING),
    plain(render_home.help_blocks),
    # bot/render/inert.py
    *[
        plain(function, f"{INJECTION}\n\u202eabc\u200d :smile: *bold*")
        for function in (
            render_inert.visible,
            render_inert.inert_plain,
            render_inert.inert,
            render_inert.inert_quote,
        )
    ],
    # bot/render/reminders.py
    dated(
        render_reminders.reminder_reply,
        PENDING,
        approvers=["U0ANA", "S0FINANCE"],
        extend_by=timedelta(minutes=30),
    ),
    dated(render_reminders.digest_reminder_reply, DIGEST.items, approvers=["U0ANA"]),
    # bot/render/standing.py
    plain(render_standing.standing_modal, PENDING, STANDING, duration_choices(timedelta(days=7))),
    plain(render_standing.granted_text, "sr_0123456789abcdef0123456789abcdef", GRANT),
    dated(
        render_standing.standing_list_blocks,
        [rule(expires_at=EXPIRES), rule(id="sr_2", expires_at=EXPIRES)],
    ),
    plain(render_standing.review_message, AUTOMATIC),
    plain(
        render_standing.review_message,
        AUTOMATIC,
        Reviewed(AUTOMATIC.id, "should_have_asked", "U0REVIEWER", NOW),
    ),
    # bot/render/status.py
    plain(render_status.status_word, SUCCEEDED),
    plain(render_status.decided_line, REJECTED),
    plain(render_status.state_line, REJECTED),
    # bot/render/words.py
    dated(render_words.remaining, EXPIRES),
    plain(render_words.when, EXPIRES),
    plain(render_words.with_times, f"it expired at {EXPIRES.isoformat()} <!here>"),
]


def _case_id(case: Case) -> str:
    return case.name.removeprefix("bot.")


def render_modules() -> list[ModuleType]:
    """Every module of the bot/render package (and any bot/render*.py that appears beside it)."""
    found = []
    for info in pkgutil.iter_modules(bot.__path__, "bot."):
        if not info.name.removeprefix("bot.").startswith("render"):
            continue
        module = importlib.import_module(info.name)
        found.append(module)
        if info.ispkg:
            found += [
                importlib.import_module(sub.name)
                for sub in pkgutil.walk_packages(module.__path__, f"{info.name}.")
            ]
    return found


def _public_functions(module: ModuleType) -> dict[str, Callable[..., object]]:
    return {
        f"{module.__name__}.{name}": value
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }


def test_every_render_module_and_every_message_taking_now_has_a_case() -> None:
    modules = render_modules()
    covered = {case.name for case in CASES}
    dated_covered = {case.name for case in CASES if case.dated}

    assert {module.__name__ for module in modules} >= {
        "bot.render.proposal",
        "bot.render.delegations",
        "bot.render.digest",
        "bot.render.digest_clicks",
        "bot.render.digest_reply",
        "bot.render.digest_table",
        "bot.render.edit",
        "bot.render.escalation",
        "bot.render.full",
        "bot.render.home",
        "bot.render.inert",
        "bot.render.reminders",
        "bot.render.standing",
    }
    for module in modules:
        functions = _public_functions(module)
        if not functions:
            continue
        assert covered & set(functions), f"{module.__name__} has no case here"
        # the blocks vocabulary's text helpers (the time left, a date) run inside these cases
        taking_now = {
            name
            for name, function in functions.items()
            if "now" in inspect.signature(function).parameters
            and inspect.signature(function).return_annotation != "str"
        }
        assert taking_now <= dated_covered, f"no case passes now to {taking_now - dated_covered}"


# --- a world where the clock, the environment and files are refused or elsewhere -----------------


class _Refused(Exception):
    pass


def _refuse(what: str) -> Callable[..., NoReturn]:
    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise _Refused(f"a render function read {what}")

    return refused


class _RefusedEnviron(dict[str, str]):
    def __getitem__(self, key: str) -> NoReturn:
        raise _Refused(f"a render function read the environment variable {key!r}")

    def get(self, key: str, default: object = None) -> NoReturn:
        raise _Refused(f"a render function read the environment variable {key!r}")

    def __contains__(self, key: object) -> NoReturn:
        raise _Refused(f"a render function asked whether {key!r} is in the environment")

    def __iter__(self) -> NoReturn:
        raise _Refused("a render function listed the environment")


def _clocked_datetime(clock: Callable[[], float]) -> tuple[type[datetime], type[date]]:
    """``datetime`` and ``date`` whose ``now``/``today`` read ``clock`` (and whatever it does)."""

    class ClockedDatetime(datetime):
        @classmethod
        def now(cls, tz: datetime_module.tzinfo | None = None) -> ClockedDatetime:
            return cls.fromtimestamp(clock(), tz)

        @classmethod
        def utcnow(cls) -> ClockedDatetime:
            return cls.fromtimestamp(clock(), UTC).replace(tzinfo=None)

        @classmethod
        def today(cls) -> ClockedDatetime:
            return cls.fromtimestamp(clock())

    class ClockedDate(date):
        @classmethod
        def today(cls) -> ClockedDate:
            return cls.fromtimestamp(clock())

    return ClockedDatetime, ClockedDate


def _at_moment(real: Callable[..., object], clock: Callable[[], float]) -> Callable[..., object]:
    return lambda *moment: real(*moment) if moment else real(clock())


@contextmanager
def _clock(clock: Callable[[], float]) -> Iterator[None]:
    """Every way to read the clock, in the standard library and in every project module's own
    names (``from datetime import datetime``, ``from time import monotonic``), reads ``clock``."""
    clocked, clocked_date = _clocked_datetime(clock)
    fakes: dict[object, object] = {datetime: clocked, date: clocked_date}
    for nullary in (time.time, time.monotonic, time.perf_counter):
        fakes[nullary] = clock
    for in_ns in (time.time_ns, time.monotonic_ns, time.perf_counter_ns):
        fakes[in_ns] = lambda: int(clock() * 1e9)
    for at_moment in (time.localtime, time.gmtime, time.ctime):  # the clock unless given a moment
        fakes[at_moment] = _at_moment(at_moment, clock)
    with pytest.MonkeyPatch.context() as patch:
        for real, fake in fakes.items():
            home = datetime_module if real in (datetime, date) else time
            patch.setattr(home, real.__name__, fake)  # type: ignore[attr-defined]
        for name, module in list(sys.modules.items()):
            if module is None or name.split(".")[0] not in PROJECT:
                continue
            for attribute, value in list(vars(module).items()):
                if any(value is real for real in fakes):
                    patch.setattr(module, attribute, fakes[value])
        yield


def _never() -> float:
    raise _Refused("a render function read the clock")


@contextmanager
def refused() -> Iterator[None]:
    """The clock, the environment and the file system all raise."""
    with _clock(_never), pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", _RefusedEnviron())
        for home, name in ((builtins, "open"), (io, "open"), (os, "open"), (os, "listdir")):
            patch.setattr(home, name, _refuse(f"a file ({name})"))
        yield


#: 2099-01-01T00:00:00Z, a moment no input mentions.
ELSEWHEN = 4_070_908_800.0


@contextmanager
def elsewhere(tmp_path: Path) -> Iterator[None]:
    """Another moment, another time zone, other locale variables, another directory."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "Pacific/Chatham")
        for name in ("LANG", "LC_ALL", "LC_TIME", "LC_NUMERIC"):
            patch.setenv(name, "de_DE.UTF-8")
        patch.setenv("COUNTERSIGN_CONFIG", str(tmp_path / "countersign.toml"))
        patch.chdir(tmp_path)
        time.tzset()
        try:
            assert time.localtime(ELSEWHEN).tm_gmtoff == (13 * 60 + 45) * 60  # summer in Chatham
            with _clock(lambda: ELSEWHEN):
                assert datetime_module.datetime.now(UTC).year == 2099
                yield
        finally:
            patch.undo()
            time.tzset()


def _frozen(case: Case) -> object:
    return copy.deepcopy((case.args, case.kwargs))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rendering_with_the_clock_environment_and_files_refused_gives_the_same_output(
    case: Case,
) -> None:
    expected = case()
    inputs = _frozen(case)

    with refused():
        shown = case()

    assert shown == expected
    assert (case.args, case.kwargs) == inputs, "the render function changed its inputs"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rendering_at_another_moment_elsewhere_gives_the_same_output(
    case: Case, tmp_path: Path
) -> None:
    expected = case()

    with elsewhere(tmp_path):
        shown = case()

    assert json.dumps(shown, sort_keys=True) == json.dumps(expected, sort_keys=True)


def _replaced(value: object, old: str, new: str) -> object:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {key: _replaced(item, old, new) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_replaced(item, old, new) for item in value]
    return value


@pytest.mark.parametrize("case", [case for case in CASES if case.dated], ids=_case_id)
@pytest.mark.parametrize("move", list(MOVES), ids=str)
def test_another_now_changes_the_time_left_and_nothing_else(case: Case, move: timedelta) -> None:
    at_now = case(NOW)
    later = case(NOW + move)

    assert (TIME_LEFT in json.dumps(at_now, ensure_ascii=False)) is case.time_left
    assert later == _replaced(at_now, TIME_LEFT, MOVES[move])
    if case.time_left:
        assert later != at_now


# --- nothing in a render module can reach the clock, the environment or the outside --------------

#: Modules a render module has no business importing: clocks, environment, files, network, Slack.
FORBIDDEN_IMPORTS = frozenset(
    {
        "os",
        "sys",
        "time",
        "io",
        "pathlib",
        "shutil",
        "socket",
        "random",
        "secrets",
        "uuid",
        "locale",
        "asyncio",
        "aiohttp",
        "aiosqlite",
        "asyncpg",
        "slack_sdk",
        "slack_bolt",
        "httpx",
        "logging",
    }
)
CLOCK_CALLS = frozenset({"now", "utcnow", "today", "time", "monotonic", "getenv", "open"})


@pytest.mark.parametrize("module", render_modules(), ids=lambda module: module.__name__)
def test_render_modules_import_nothing_that_reads_the_clock_environment_or_outside(
    module: ModuleType,
) -> None:
    tree = ast.parse(inspect.getsource(module))
    imported = set()
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call):
            target = node.func
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            called.add(name)

    assert not imported & FORBIDDEN_IMPORTS
    assert not called & CLOCK_CALLS
