"""Every renderer, walked with hostile values in every agent-fed field: nothing an agent writes
becomes Slack formatting (a mention, a broadcast, a link, bold, strike, italic, code, an emoji, a
block quote, a line of its own that could pass for Countersign's, an invisible or reordering
character).

The renderers are discovered, not listed: every public function of every module of bot/render is
called with hostile arguments built from its type hints, unless it is named below as a builder of
Countersign's own text (it takes text already made, :data:`BUILDERS`) or as returning raw values
for a renderer to make inert (:data:`RAW`). A new renderer is walked as soon as it is exported;
one whose parameters this test cannot build makes it fail, naming the parameter.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import typing
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from pydantic import JsonValue

import bot.render
from bot.render.digest_clicks import Tally
from bot.render.digest_review import ReviewState, review_state
from bot.render.digest_table import Table, compact_table
from bot.render.edit_form import EditForm, edit_form
from bot.render.home import StateCheck
from contracts.base import Preview, PreviewField
from contracts.escalation import Signals, Summary, ToolResult, Trigger, TriggerKind, TriggerVerdict
from contracts.formats import Formats
from contracts.outcomes import NeedsReconciliation, RevisionRequired, Succeeded, TerminalFailure
from contracts.standing import Grant, StandingPolicy
from store.audit import AuditEntry
from store.delegations import Delegation
from store.digests import Digest
from store.escalations import Escalation, EscalationStatus
from store.proposals import Proposal, Status
from store.standing import Reviewed, RuleHistory, StandingRule
from tests.bot.render.test_escalation import stored
from tests.bot.render.test_proposal import NOW, make_proposal

# --- what a hostile agent writes -----------------------------------------------------------------

#: Each attack carries a marker (FORGED…) that the checks below look for next to formatting.
HOSTILE: tuple[str, ...] = (
    "x <@U0BOSS> <!here>FORGED <!channel>FORGED <!everyone>FORGED <#C0SECRET> <!subteam^S0BOSS>",
    "x <http://evil.example|FORGED link> http://evil.example/FORGED www.evil.example",
    "x *FORGED bold* _FORGED italic_ ~FORGED strike~ `FORGED code` ```FORGED fence```",
    "x :skull_and_crossbones: FORGED :white_check_mark:",
    "x\nFORGEDLINE :white_check_mark: *Approved by Priya Shah (finance)*",
    "x\r\nFORGEDLINE\u2028FORGEDLINE\u0085FORGEDLINE\u000bFORGEDLINE",
    "> FORGEDQUOTE",
    "&gt; FORGEDQUOTE",
    "x \u202eFORGED\u202c \u200bFORGED\u200d\ufeff\u2066 FORGED\u00a0",
    "x\nFORGEDLINE \u0410pproved by \u0440riya (homoglyphs) FORGED",
    "x \U0001f534 FORGED \u2705",
)
#: All of them in one value.
EVERYTHING = "\n".join(HOSTILE)

_TOKENS = (
    "<@U0BOSS>",
    "<!here>FORGED",  # Countersign pages with <!here> itself: the agent's is followed by FORGED
    "<!channel>FORGED",
    "<!everyone>FORGED",
    "<#C0SECRET",
    "<!subteam^S0BOSS",
    "<http://evil",  # Countersign links to messages itself
    "://evil",
    "www.evil",
    ":skull_and_crossbones:",
    "FORGED :white_check_mark:",
    "FORGEDLINE :white_check_mark:",
    "```FORGED",
)
#: A formatting marker of the agent's that Slack would honour: the one opening its words (a
#: marker closing them may be Countersign's own, around the agent's inert text).
_FORMATTING = re.compile(r"(^|[\s>(])[*_~`]+FORGED")
#: A line the agent's text starts, outside a quote marked as the agent's, or a quote of its own.
_OWN_LINE = re.compile(r"^\s*(FORGEDLINE|(>|&gt;)\s*FORGEDQUOTE)")
#: Countersign's own code blocks: agent lines inside one show as code (no backtick of the
#: agent's can close it), so they cannot pass for a line of Countersign's.
_CODE_BLOCK = re.compile(r"```.*?```", re.S)
#: In plain text (not parsed: a quote is not a quote), a line the agent's text starts.
_OWN_PLAIN_LINE = re.compile(r"^\s*FORGEDLINE")
_RAW_EMOJI = ("\U0001f534", "\u2705")


def invisible(text: str) -> list[str]:
    return [
        f"U+{ord(c):04X}"
        for c in text
        if c != "\n" and unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp", "Co", "Cs")
    ] + [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Zs" and c != " "]


@dataclass(frozen=True)
class PlainText:
    """A renderer's result that is the text of a plain_text object (sent with emoji off)."""

    text: str


#: Renderers whose text goes into plain_text objects (with ``emoji: false``), not mrkdwn.
PLAIN_RESULTS = frozenset({"inert.inert_plain"})


def escaped(rendered: object) -> list[str]:
    """Each piece of agent formatting Slack would interpret in ``rendered`` (a message, view,
    blocks, or a mrkdwn string), as ``what: where``."""
    mrkdwn: list[str] = []
    plain: list[tuple[str, bool]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "mrkdwn" and isinstance(node.get("text"), str):
                mrkdwn.append(node["text"])
            elif kind == "plain_text" and isinstance(node.get("text"), str):
                plain.append((node["text"], node.get("emoji", True) is not False))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if isinstance(rendered, PlainText):
        plain.append((rendered.text, False))
    elif isinstance(rendered, str):
        mrkdwn.append(rendered)
    else:
        walk(rendered)
        if isinstance(rendered, dict) and "blocks" in rendered and "text" in rendered:
            mrkdwn.append(rendered["text"])  # a message's fallback: notifications parse it
    problems: list[str] = []
    for text in mrkdwn:
        problems += [f"{token!r}: {text!r}" for token in _TOKENS if token in text]
        problems += [f"formatting {m.group()!r}: {text!r}" for m in _FORMATTING.finditer(text)]
        problems += [
            f"a line of its own: {line!r}"
            for line in _CODE_BLOCK.sub("", text).split("\n")
            if _OWN_LINE.match(line)
        ]
    for text, emoji in plain:
        if emoji and ":skull_and_crossbones:" in text:
            problems.append(f"an emoji in plain text: {text!r}")
        problems += [
            f"a line of its own: {line!r}"
            for line in text.split("\n")
            if _OWN_PLAIN_LINE.match(line)
        ]
    for text in [*mrkdwn, *(text for text, _ in plain)]:
        problems += [f"invisible {code}: {text!r}" for code in invisible(text)]
        problems += [f"raw emoji: {text!r}" for e in _RAW_EMOJI if e in text]
    return problems


# --- hostile values of every type a renderer takes -----------------------------------------------


def hostile_proposals(text: str) -> list[Proposal]:
    """A proposal with ``text`` in every agent-fed field, in every status and shape."""
    preview = Preview(
        title=f"Refund {text}",
        fields=(
            PreviewField(label=f"Memo {text}", value=text),
            PreviewField(label="Customer", value=f"cus {text}"),
        ),
    )
    base = make_proposal(
        agent_reason=text,
        run_id=text,
        preview=preview,
        request={"payment_id": text, "memo": text},
        arguments={"payment_id": text, "memo": text, "amount_cents": 12000, "currency": "USD"},
        policy_note=f"rule 'big-refunds': Memo {text}",
        slack_channel="C0APPROVALS",
        slack_ts="1700000000.000100",
    )
    decided = {"decided_by": "U0APPROVER", "decided_at": NOW, "decision_note": text}
    correlation = f"cs_{text}"
    return [
        base,
        base.model_copy(update={"quorum": 2, "approver_roles": (text,)}),
        base.model_copy(update={"supersedes": "cs_older", "edited_by": "U0EDITOR"}),
        base.model_copy(update={"status": Status.REJECTED, **decided}),
        base.model_copy(update={"status": Status.EXPIRED}),
        base.model_copy(update={"status": Status.DENIED, "decision": "deny"}),
        base.model_copy(update={"status": Status.EXECUTING, **decided}),
        base.model_copy(update={"status": Status.CANCELLED, **decided}),
        base.model_copy(update={"status": Status.SUPERSEDED, "superseded_by": text, **decided}),
        base.model_copy(
            update={
                "status": Status.SUCCEEDED,
                "outcome": Succeeded(result={"note": text, text: text}),
                **decided,
            }
        ),
        base.model_copy(
            update={"status": Status.SUCCEEDED, "outcome": Succeeded(result=text), **decided}
        ),
        base.model_copy(
            update={
                "status": Status.NEEDS_RECONCILIATION,
                "outcome": NeedsReconciliation(detail=text, correlation_id=correlation),
                **decided,
            }
        ),
        base.model_copy(
            update={
                "status": Status.REVISION_REQUIRED,
                "outcome": RevisionRequired(reason=text),
                **decided,
            }
        ),
        base.model_copy(
            update={
                "status": Status.FAILED,
                "outcome": TerminalFailure(detail=text, correlation_id=correlation),
                **decided,
            }
        ),
    ]


def hostile_escalations(text: str) -> list[Escalation]:
    label = text.replace("\n", " ")[:100]
    summary = Summary(
        goal=text,
        blocked_on=text,
        steps_done=(text, text),
        tool_results=(ToolResult(tool=text[:100], result_summary=text),),
    )
    signals = Signals(
        failed_turns=1,
        error_codes=(label, label, label),
        topic_labels=(label,),
        confidence=0.1,
        customer_quote=text,
    )
    base = stored(
        summary=summary,
        conversation_id=text[:200],
        customer_ref=text[:200],
        team=text[:60],
        trigger=Trigger(kind=TriggerKind.REPEATED_FAILURE, signals=signals),
        # as stored before a verdict's note held Countersign's words alone
        verdict=TriggerVerdict(
            kind=TriggerKind.REPEATED_FAILURE, note=f"error {label!r} 3 times (threshold 3)"
        ),
    )
    return [
        base,
        base.model_copy(update={"status": EscalationStatus.TAKEN, "owner": "U0OWNER"}),
        base.model_copy(
            update={"status": EscalationStatus.HANDED_BACK, "owner": "U0OWNER", "note": text}
        ),
        base.model_copy(
            update={
                "status": EscalationStatus.RESOLVED,
                "resolved_by": "U0OWNER",
                "resolved_at": NOW,
                "note": text,
                "reannouncements": 1,
            }
        ),
    ]


def formats_of(_operation: str) -> Formats:
    return {}


def builders(text: str) -> dict[object, list[Any]]:
    """Hostile values by type (as the renderers' type hints name them)."""
    proposals = hostile_proposals(text)
    escalations = hostile_escalations(text)
    digest = Digest(
        id="dg_digest",
        channel="C0REFUNDS",
        ts="1700000000.000100",
        operation="payments.refund",
        requested_by="U0REQUESTER",
        created_at=NOW,
        items=tuple(p.model_copy(update={"digest_id": "dg_digest"}) for p in proposals[:4]),
    )
    delegation = Delegation(
        id="dl_1", agent=text[:60], person="U0DANA", created_at=NOW, expires_at=NOW
    )
    rule = StandingRule(
        id="sr_0123456789abcdef0123456789abcdef",
        operation="payments.refund",
        agent=text[:60],
        rule_id=text[:60],
        ceiling_field="amount_cents",
        ceiling=12000,
        created_by="U0ADMIN",
        created_from="cs_first",
        created_at=NOW,
        expires_at=NOW + timedelta(hours=4),
        uses=3,
    )
    grant = Grant(
        operation="payments.refund",
        agent=text[:60],
        rule_id=text[:60],
        ceiling_field="amount_cents",
        ceiling=12000,
        arguments={"payment_id": text, "memo": text},
        varying=("amount_cents",),
        created_by="U0ADMIN",
        created_from="cs_first",
        created_at=NOW,
        expires_at=NOW + timedelta(hours=4),
    )
    form = edit_form(
        {
            "type": "object",
            "properties": {"memo": {"type": "string"}, "count": {"type": "integer"}},
        },
        {"memo": text, "count": 3},
    )
    trail = [
        AuditEntry(
            seq=1,
            at=NOW,
            proposal_id="cs_1",
            actor=text,
            event=text,
            detail={"note": text},
            prev_hash="0",
            hash="1",
        )
    ]
    hostile_json: JsonValue = {"memo": text, text: [text]}
    history = RuleHistory(approved=784, rejected=2, expired=1, days=30)
    return {
        str: [text],
        str | None: [text],
        int: [200],
        float: [90.0],
        bool: [True],
        datetime: [NOW],
        timedelta: [timedelta(hours=1)],
        timedelta | None: [timedelta(hours=1)],
        Proposal: proposals,
        Proposal | None: proposals[:1],
        Sequence[Proposal]: [proposals],
        Mapping[str, Proposal] | None: [{p.id: p for p in proposals}],
        Sequence[tuple[int, Proposal, Status]]: [
            [(n, p, p.status) for n, p in enumerate(proposals, 1)]
        ],
        Escalation: escalations,
        Escalation | None: escalations[:1],
        Sequence[Escalation]: [escalations],
        Digest: [digest],
        ReviewState: [review_state(digest)],
        Table: [compact_table(digest.items, {})],
        Delegation: [delegation],
        Sequence[Delegation]: [[delegation]],
        StandingRule: [rule],
        Sequence[StandingRule]: [[rule]],
        Grant: [grant],
        RuleHistory: [history],
        RuleHistory | None: [history],
        Reviewed | None: [Reviewed(proposal_id="cs_1", verdict="ok", reviewer="U0R", at=NOW)],
        StandingPolicy: [
            StandingPolicy(max=timedelta(days=1), admins=("finance",), ceiling="amount_cents")
        ],
        Sequence[timedelta]: [[timedelta(hours=1)]],
        Sequence[int]: [[5]],
        EditForm: [form],
        Formats | None: [None],
        Formats: [{}],
        Callable[[str], Formats] | None: [formats_of],
        # a decision operation's own words, and an operation's
        Callable[[str], bool] | None: [lambda _: True, lambda _: False],
        Sequence[AuditEntry]: [trail],
        StateCheck | None: [StateCheck(at=NOW, reason=text)],
        Mapping[str, StateCheck] | None: [
            {p.id: StateCheck(at=NOW, reason=text, failed=True) for p in proposals}
        ],
        Mapping[str, int] | None: [{text: 3}],
        Tally: [
            Tally(verb="approved", done=1, refused=Counter({text: 2})),
            Tally(verb="approved", refused=Counter({text: 1}), named=[(2, text, text)]),
        ],
        JsonValue: [hostile_json],
        Mapping[str, JsonValue]: [hostile_json],
        tuple[Mapping[str, JsonValue], Mapping[str, JsonValue]]: [(hostile_json, hostile_json)],
        Sequence[str]: [[text, text]],
    }


# --- what is not walked, and why -----------------------------------------------------------------

#: Builders of Countersign's own Slack text: they take text already made (mrkdwn or plain text
#: Countersign wrote, with any agent value in it made inert first), never agent text itself.
BUILDERS: dict[str, str] = {
    "inert.own": "Countersign's own words as Slack text (read by test_agent_text_static)",
    "blocks.section": "a section of mrkdwn already made",
    "blocks.context": "a context of mrkdwn already made",
    "blocks.message": "a message of blocks and a fallback already made",
    "blocks.field_sections": "fields of mrkdwn already made",
    "blocks.packed_sections": "sections of mrkdwn lines already made",
    "blocks.plain": "Countersign's own plain text (button labels, modal titles)",
    "blocks.modal": "a modal of blocks already made, titled and labelled in Countersign's words",
    "blocks.text_input": "a modal's text input, labelled and hinted in Countersign's words",
    "blocks.clip": "cuts text already made to a Block Kit limit",
    "blocks.shown_in_part": "the id of what Show full shows, and Countersign's words",
    "blocks.escape": "escapes &, < and > of a value a person typed, not an agent",
}
#: Functions returning values, not Slack text: their callers make them inert.
RAW: dict[str, str] = {
    "figures.changed_fields": "label, old and new value of each changed field",
    "figures.result_fields": "label and value of each result field",
    "blocks.compact": "a JSON value on one line, shown inside a code block made inert",
    "blocks.packed": "texts already made, joined into as few section texts as fit",
    "words.short_id": "the first characters of a proposal id",
    "clicks.withdrawn_reason": "the reason told to the clicker through refusal_text",
    "blocks.is_clipped": "whether blocks hold the clip marker",
    "digest.shown_whole": "whether a digest fits whole",
    "proposal.preview_label": "a preview field's label, made inert where it is shown",
    "digest_table.compact_table": "a digest's preview values as a table, made inert where shown",
    "inert.visible": "the inert renderer's own step: invisible characters shown by their code",
    "digest_review.chosen_places": "which boxes of a submitted review page are ticked: numbers",
    "digest_review.box_place": "the item a box's block id names: a number",
    "digest_review.box_block_id": "a block id Countersign makes from an item's number",
    "digest_review.review_state": "what a review modal remembers: places and binding hashes",
    "edit_form.edit_form": "the typed inputs of a request schema; edit.edit_modal shows them",
    "edit_form.read_request": "a submitted edit form read back: the values a person typed",
    "edit_form.input_label": "an input's label: the operation's own, shown as plain text",
    "edit_form.problem_errors": "modal errors (plain text) under the inputs a person typed in",
    "edit_form.currency_errors": "modal errors (plain text): Countersign's words and labels",
}


#: Parameters that are Countersign's own, not agent text, with the value they take.
OWN_PARAMETERS: dict[tuple[str, str], object] = {
    # the token Countersign minted, shown once to the person who asked for it
    ("delegations.minted_blocks", "token"): "csd_0123456789abcdef0123456789abcdef",
    # the notice is an answer Countersign already rendered (refusal_text and the like)
    ("home.home_view", "notice"): None,
    # where the edit went: a permalink Slack gave
    # the id of what the click was recorded for (it exists: the click is stored with it)
    ("clicks.click_recorded_text", "subject"): "cs_2v6qk3bn7xw4yq5fz2m3a6lhpe",
    # the verb of the recorded click, Countersign's own (store/proposals/clicks.py ClickVerb)
    ("clicks.click_recorded_text", "verb"): "reject",
    # the modal's title, Countersign's ("Full proposals")
    ("full.full_views", "title"): "Full proposals",
    # Countersign's number for the item in a digest review, its own mrkdwn
    ("full.proposal_in_full", "heading"): "*Item 2*\n",
    ("edit.superseded_reply", "link"): "https://example.slack.com/archives/C0A/p1700000000000100",
}


def renderers() -> Iterator[tuple[str, Callable[..., object]]]:
    """Every public function of every module of bot/render, as ``module.name``."""
    for info in pkgutil.iter_modules(bot.render.__path__):
        module: ModuleType = importlib.import_module(f"bot.render.{info.name}")
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                yield f"{info.name}.{name}", value


def calls(
    name: str, function: Callable[..., object], values: Mapping[object, list[Any]]
) -> Iterator[dict[str, object]]:
    """Keyword arguments for ``function``: every parameter hostile, one call per value of the
    parameter with the most values (the others at their first)."""
    hints = typing.get_type_hints(function)
    choices: dict[str, list[object]] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        hint = hints[parameter.name]
        if (name, parameter.name) in OWN_PARAMETERS:
            choices[parameter.name] = [OWN_PARAMETERS[name, parameter.name]]
            continue
        if hint not in values:
            raise AssertionError(
                f"{name}: no hostile value for parameter {parameter.name!r} ({hint}); add one "
                "to builders() in this test, or name the function in BUILDERS or RAW, with why"
            )
        choices[parameter.name] = values[hint]
    widest = max(choices, key=lambda p: len(choices[p]), default=None)
    if widest is None:
        yield {}
        return
    for value in choices[widest]:
        yield {p: (value if p == widest else options[0]) for p, options in choices.items()}


def walk(text: str) -> list[str]:
    """Every renderer called with ``text`` in every agent-fed place: what escaped."""
    values = builders(text)
    problems: list[str] = []
    for name, function in renderers():
        if name in BUILDERS or name in RAW:
            continue
        rendered_once = False
        for arguments in calls(name, function, values):
            try:
                rendered = function(**arguments)
            except ValueError as refused:  # a precondition, as outcome_reply's of an outcome
                assert "needs" in str(refused), f"{name}: {refused}"
                continue
            rendered_once = True
            if rendered is None or isinstance(rendered, bool):
                continue
            if name in PLAIN_RESULTS:
                assert isinstance(rendered, str)
                rendered = PlainText(rendered)
            problems += [f"{name}: {problem}" for problem in escaped(rendered)]
        assert rendered_once, f"{name} refused every hostile value"
    return problems


def test_every_renderer_is_walked_or_named_with_a_reason() -> None:
    names = {name for name, _ in renderers()}
    assert set(BUILDERS) <= names and set(RAW) <= names, "a named function no longer exists"
    walked = names - set(BUILDERS) - set(RAW)
    # the ones the issue names, at least: a message, a digest, the Home tab, modals, replies
    for expected in (
        "proposal.proposal_message",
        "replies.outcome_reply",
        "digest.digest_message",
        "home.home_view",
        "home.waiting_blocks",
        "escalation.escalation_message",
        "full.full_view",
        "edit.edit_modal",
        "reminders.reminder_reply",
        "standing.standing_list_blocks",
    ):
        assert expected in walked
    values = builders("x")
    for name, function in renderers():
        if name in walked:
            assert list(calls(name, function, values)), name


@pytest.mark.parametrize("attack", [*HOSTILE, EVERYTHING], ids=lambda a: repr(a)[:40])
def test_no_renderer_lets_an_agents_formatting_through(attack: str) -> None:
    assert walk(attack) == []


def test_the_check_sees_formatting_that_escapes() -> None:
    """The check is not blind: text passed on with Slack's three escapes alone still formats."""
    leaked = {"type": "section", "text": {"type": "mrkdwn", "text": _escape_only(EVERYTHING)}}
    problems = escaped([leaked])
    for kind in (
        "<http://evil",
        "formatting",
        "a line of its own",
        "invisible",
        ":skull",
        "raw emoji",
    ):
        assert any(kind in problem for problem in problems), kind


def _escape_only(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("&lt;http", "<http")
    )


def test_hostile_values_reach_every_renderer_as_text_shown() -> None:
    """Shown, as text: the walk is not passing because a renderer drops the agent's words."""
    values = builders("x FORGED-VISIBLE")
    shown = json.dumps(
        bot.render.proposal.proposal_message(values[Proposal][0], now=NOW),
        ensure_ascii=False,
    )
    assert "FORGED-VISIBLE" in shown
