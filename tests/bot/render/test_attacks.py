"""What the approver sees is what runs, and nothing else: attacker strings in every agent-supplied
place render inert and labelled, after Countersign's own verdict; what had to be cut says so and
offers Show full; an edit says who changed what."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.views import View

from bot.render import proposal as render
from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_CHOOSE,
    DIGEST_REVIEW,
    DIGEST_SHOW_FULL,
    SHOW_FULL,
)
from bot.render.digest import digest_message, shown_whole
from bot.render.escalation import escalation_message
from bot.render.full import full_view, full_views
from bot.render.home import home_view, proposal_detail_blocks
from bot.render.replies import rejection_reply
from contracts.base import Preview, PreviewField
from contracts.escalation import Summary
from tests.bot.render.test_digest import digest, item
from tests.bot.render.test_escalation import stored
from tests.bot.render.test_proposal import (
    NOW,
    all_text,
    assert_valid_message,
    buttons,
    make_proposal,
    mrkdwn_texts,
)

FORGERY = "*Approved by <@U0BOSS>*\n:white_check_mark: Why you are asked: safe"
RTL = "refund \u202e0001 USD\u202c to cus_1"
ZWJ = "pay\u200d_1\u200b23\ufeff"
HERE = "<!here> look at this"
LINK = "<https://evil.example|click here> or https://evil.example/steal"
ATTACKS = [FORGERY, RTL, ZWJ, HERE, LINK]

#: Lines only Countersign writes; agent text must never produce one.
_OURS = re.compile(
    r"^(\*Why you are asked:\*|:white_check_mark: Approved by|:red_circle:|"
    r":large_orange_circle:|:white_circle:|\*Requested by\*)"
)


def attacked_proposal(**changes: Any) -> Any:
    text = " ".join(ATTACKS)
    values: dict[str, Any] = {
        "agent_reason": "\n".join(ATTACKS),
        "run_id": FORGERY,
        "preview": Preview(
            title=f"Refund {FORGERY}",
            fields=tuple(PreviewField(label=f"Value {n}", value=a) for n, a in enumerate(ATTACKS)),
        ),
        "request": {"payment_id": text},
        "arguments": {"payment_id": text, "amount_cents": 12000},
    }
    values.update(changes)
    return make_proposal(**values)


def assert_nothing_interpreted(blocks_or_message: Any) -> None:
    """No mention, link or emoji from agent text in any mrkdwn (plain text, which Slack does not
    parse, goes without emoji), and no invisible character anywhere."""
    if isinstance(blocks_or_message, list):
        blocks_or_message = {"blocks": blocks_or_message}
    texts = mrkdwn_texts(blocks_or_message)
    if isinstance(blocks_or_message, dict) and "text" in blocks_or_message:
        texts.append(blocks_or_message["text"])  # the fallback: notifications parse it
    for token in ("<@U0BOSS>", "<!here>", "<https://evil", "https://evil", ":white_check_mark:"):
        assert not any(token in text for text in texts), token
    everything = json.dumps(blocks_or_message, ensure_ascii=False)
    assert not any(unicodedata.category(c) in ("Cf", "Cc", "Zl") for c in everything)


def our_lines(texts: list[str]) -> list[str]:
    return [line for text in texts for line in text.split("\n") if _OURS.match(line)]


def test_attacker_strings_render_inert_in_the_proposal_message() -> None:
    message = render.proposal_message(attacked_proposal(), now=NOW)

    assert_valid_message(message)
    assert_nothing_interpreted(message)
    # Countersign's own lines: one "Why you are asked", one risk label, one "Requested by"
    assert our_lines(mrkdwn_texts(message)) == [
        ":red_circle: Irreversible (money or external effect)",
        "*Why you are asked:* Amount 120.00 USD &gt; 100.00 USD (rule *big-refunds*)",
        "*Requested by* agent *billing-bot* for <@U0REQUESTER>",  # the run id: in Show full
    ]
    # the agent's explanation: labelled, every line quoted, nothing bold or linked
    [reason] = [t for t in mrkdwn_texts(message) if t.startswith("*Agent's explanation")]
    assert all(line.startswith(">") for line in reason.split("\n")[1:])
    assert ">\u2217Approved by &lt;@U0BOSS&gt;\u2217" in reason
    assert ">\u2236white_check_mark: Why you are asked: safe" in reason
    assert ">refund \\u202e0001 USD\\u202c to cus_1" in reason
    assert ">&lt;!here&gt; look at this" in reason
    assert "&lt;https\u2236//evil.example|click here&gt;" in reason
    # the header holds agent values: plain text, no emoji from shortcodes, on one line
    header = message["blocks"][1]["text"]
    assert message["blocks"][1]["type"] == "header"
    assert header["emoji"] is False
    assert "\n" not in header["text"]


def test_countersigns_verdict_comes_first_then_the_agents_values() -> None:
    message = render.proposal_message(attacked_proposal(), now=NOW)
    blocks = message["blocks"]
    kinds = [b["type"] for b in blocks]

    # the verdict in a block of its own, first: even the title (the agent's values) follows it
    assert kinds[:2] == ["section", "header"]
    verdict = blocks[0]["text"]["text"]
    assert verdict.startswith(":red_circle: Irreversible (money or external effect)\n")
    assert "*Why you are asked:* Amount 120.00 USD &gt; 100.00 USD (rule *big-refunds*)" in verdict
    assert ":hourglass_flowing_sand: Expires" in verdict
    # everything the agent supplied comes after the verdict
    text = json.dumps(blocks[1:], ensure_ascii=False)
    for shown in ("Value 0", "Agent's explanation", "Reference", "Approved by"):
        assert shown in text
    assert "Approved by" not in json.dumps(blocks[0])


def test_the_approve_confirmation_shows_the_title_as_plain_text_without_emoji() -> None:
    confirm = buttons(render.proposal_message(attacked_proposal(), now=NOW))["approve"]["confirm"]
    assert confirm["text"]["emoji"] is False
    assert "\n" not in confirm["text"]["text"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_every_attack_in_every_place_stays_valid_block_kit(attack: str) -> None:
    proposal = attacked_proposal(
        agent_reason=attack,
        run_id=attack,
        preview=Preview(title=attack, fields=(PreviewField(label=attack, value=attack),)),
    )
    for message in (
        render.proposal_message(proposal, now=NOW),
        rejection_reply(proposal.model_copy(update={"decision_note": attack})),
    ):
        assert_valid_message(message)
        assert_nothing_interpreted(message)


def test_the_digest_renders_agent_text_inert() -> None:
    attacked = digest(
        [
            item(1, agent_reason=FORGERY, preview=Preview(title=FORGERY)),
            item(2, preview=Preview(title=HERE, fields=(PreviewField(label="L", value=LINK),))),
        ]
    )
    message = digest_message(attacked, now=NOW)

    assert_valid_message(message)
    assert_nothing_interpreted(message)
    assert len([line for line in our_lines(mrkdwn_texts(message)) if "Why you" in line]) == 1


def test_escalation_summaries_render_inert() -> None:
    escalation = stored(
        summary=Summary(goal=FORGERY, blocked_on=HERE, steps_done=(LINK, RTL), tool_results=())
    )
    message = escalation_message(escalation)

    assert_valid_message(message)
    assert_nothing_interpreted(message)


# --- shown in part, and Show full -----------------------------------------------------------------


def long_proposal() -> Any:
    memo = "start " + "x" * 5000 + " end-of-memo"
    return make_proposal(
        preview=Preview(title="Refund", fields=(PreviewField(label="Memo", value=memo),)),
        arguments={"payment_id": "pay_123", "memo": memo},
    )


def test_a_clipped_message_says_so_and_offers_show_full() -> None:
    message = render.proposal_message(long_proposal(), now=NOW)

    assert_valid_message(message)
    assert "*Shown in part*" in all_text(message)
    assert buttons(message)[SHOW_FULL]["value"] == long_proposal().id


def test_a_message_shown_whole_has_no_show_full() -> None:
    message = render.proposal_message(make_proposal(), now=NOW)
    assert SHOW_FULL not in buttons(message)
    assert "Shown in part" not in all_text(message)


def test_many_fields_beyond_the_message_also_offer_show_full() -> None:
    fields = tuple(PreviewField(label=f"F{i}", value="v") for i in range(800))
    message = render.proposal_message(
        make_proposal(preview=Preview(title="T", fields=fields)), now=NOW
    )
    assert_valid_message(message)
    assert SHOW_FULL in buttons(message)
    assert "approve" in buttons(message)


def test_show_full_modal_has_every_frozen_argument_in_full_and_the_binding_hash() -> None:
    proposal = long_proposal()
    view = full_view(proposal)

    View(**view).validate_json()
    assert "submit" not in view  # read-only
    assert len(view["blocks"]) <= 100
    shown = "".join(
        b["text"]["text"]
        for b in view["blocks"]
        if b["type"] == "section" and b["text"]["type"] == "plain_text"
    )
    assert json.dumps(proposal.arguments["memo"]) in shown  # the frozen argument, whole
    assert proposal.preview.fields[0].value in shown  # the preview value, whole
    assert proposal.binding_hash in json.dumps(view)
    for block in view["blocks"]:
        if block["type"] == "section" and block["text"]["type"] == "plain_text":
            assert len(block["text"]["text"]) <= 3000
            assert block["text"]["emoji"] is False


def test_show_full_shows_agent_values_inert_but_character_for_character() -> None:
    proposal = attacked_proposal()
    view = full_view(proposal)
    View(**view).validate_json()
    text = json.dumps(view, ensure_ascii=False)
    assert FORGERY.replace("\n", "⏎") in text  # plain text: shown as written, on one line
    assert "\u202e" not in text and "\\\\u202e" in text
    mrkdwn = [
        e["text"] for b in view["blocks"] for e in b.get("elements", []) if e["type"] == "mrkdwn"
    ]
    assert all("<@U0BOSS>" not in t for t in mrkdwn)


def test_show_full_lists_many_small_arguments_without_running_out_of_blocks() -> None:
    arguments: dict[str, Any] = {f"arg_{k}": f"value {k}" for k in range(300)}
    view = full_view(make_proposal(arguments=arguments))
    View(**view).validate_json()
    shown = json.dumps(view)
    assert all(f'Arg {k}: \\"value {k}\\"' in shown for k in range(300))
    assert all(f"arg_{k} = (as above)" in shown for k in range(300))
    assert "Too long" not in shown


def test_show_full_for_a_digest_that_does_not_fit_says_which_are_left_out() -> None:
    big = "y" * 2900
    items = [
        item(n, arguments={f"a{k}": big for k in range(6)}, agent_reason=None) for n in range(1, 15)
    ]
    view = full_views(items)
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100
    assert "more proposals do not fit here" in json.dumps(view)


# --- digests: Approve all only when every item is shown whole -------------------------------------


def actions_of(message: dict[str, Any]) -> set[str]:
    return set(buttons(message))


def test_a_digest_shown_whole_offers_approve_all() -> None:
    message = digest_message(digest([item(1), item(2)]), now=NOW)
    assert {DIGEST_APPROVE_ALL, DIGEST_CHOOSE} <= actions_of(message)
    assert DIGEST_SHOW_FULL not in actions_of(message)


def test_a_digest_with_a_clipped_item_offers_review_choose_and_show_full() -> None:
    long_title = item(2, preview=Preview(title="Refund " + "9" * 400))
    message = digest_message(digest([item(1), long_title]), now=NOW)

    assert_valid_message(message)
    assert DIGEST_APPROVE_ALL not in actions_of(message)
    assert {DIGEST_REVIEW, DIGEST_CHOOSE, DIGEST_SHOW_FULL} <= actions_of(message)
    assert buttons(message)[DIGEST_SHOW_FULL]["value"] == "dg_digest"
    assert buttons(message)[DIGEST_REVIEW]["value"] == "dg_digest"
    assert "*Shown in part*" in all_text(message)


def test_a_digest_item_with_a_clipped_field_is_not_shown_whole_but_can_be_reviewed() -> None:
    fields = tuple(PreviewField(label=f"F{i}", value=f"{i}" * (400 * i)) for i in range(5))
    items = [item(n, preview=Preview(title="T", fields=fields[n:])) for n in range(2)]
    message = digest_message(digest(items), now=NOW)
    assert DIGEST_APPROVE_ALL not in actions_of(message)
    assert DIGEST_REVIEW in actions_of(message)
    assert "(clipped)" in all_text(message)


def test_a_digest_with_rows_beyond_the_message_offers_no_approve_all() -> None:
    def fields(n: int) -> tuple[PreviewField, ...]:
        return tuple(PreviewField(label=f"Field {k}", value=f"{n} " + "v" * 110) for k in range(3))

    items = [
        item(
            n, agent_reason=f"{n} " + "r" * 190, preview=Preview(title="t" * 140, fields=fields(n))
        )
        for n in range(1, 200)
    ]
    message = digest_message(digest(items), now=NOW)
    assert_valid_message(message)
    assert DIGEST_APPROVE_ALL not in actions_of(message)
    assert DIGEST_SHOW_FULL in actions_of(message)


def test_shown_whole_agrees_with_the_offer_of_approve_all() -> None:
    fields = tuple(PreviewField(label=f"Field {k}", value="v" * 80) for k in range(3))
    many = [
        item(n, agent_reason="r" * 190, preview=Preview(title="t" * 140, fields=fields))
        for n in range(1, 200)
    ]
    cases = [
        [item(1), item(2)],
        [item(1), item(2, preview=Preview(title="Refund " + "9" * 400))],
        [item(1, agent_reason="word " * 100)],
        many,
        many[:20],
    ]
    seen = set()
    for items in cases:
        shown = digest([*items])
        offered = DIGEST_APPROVE_ALL in actions_of(digest_message(shown, now=NOW))
        assert shown_whole(shown, now=NOW) is offered
        seen.add(offered)
    assert seen == {True, False}


# --- edits say who changed what -------------------------------------------------------------------


def edited_pair() -> tuple[Any, Any]:
    old = make_proposal(request={"payment_id": "pay_123", "amount_cents": 12000})
    new = make_proposal(
        id="cs_edit0000000000000000000000",
        request={"payment_id": "pay_123", "amount_cents": 9000},
        supersedes=old.id,
        edited_by="U0EDITOR",
    )
    return old, new


def test_an_edited_proposal_says_who_edited_it_and_what_changed() -> None:
    old, new = edited_pair()
    message = render.proposal_message(new, now=NOW, previous=old)

    assert_valid_message(message)
    [edit] = [t for t in mrkdwn_texts(message) if "Edited by" in t]
    assert "*Edited by <@U0EDITOR>*" in edit
    assert "• *Amount cents*: `12000` → `9000`" in edit
    assert "payment_id" not in edit  # unchanged fields are not listed


def test_the_home_tab_and_show_say_who_edited_it_and_why_asked() -> None:
    old, new = edited_pair()
    view = home_view(waiting=[new], owned=[], decisions=[], now=NOW, previous={new.id: old})
    View(**view).validate_json()
    home = json.dumps(view, ensure_ascii=False)
    assert "*Edited by <@U0EDITOR>*" in home
    assert "• *Amount cents*: `12000` → `9000`" in home
    assert "*Why you are asked:* Amount 120.00 USD &gt; 100.00 USD (rule *big-refunds*)" in home
    assert "Agent's explanation (unverified)" in home
    assert ">The customer was charged twice." in home

    detail = proposal_detail_blocks(new, [], now=NOW, previous=old)
    shown = json.dumps(detail, ensure_ascii=False)
    assert "• *Amount cents*: `12000` → `9000`" in shown
    assert "*Why you are asked:* Amount 120.00 USD &gt; 100.00 USD (rule *big-refunds*)" in shown
    assert ">The customer was charged twice." in shown
    assert new.binding_hash not in shown
    assert "Reference `cs_edit0000000000000000000000`" in shown
    assert_valid_message({"text": "t", "blocks": detail})


def test_home_and_show_render_attacker_text_inert() -> None:
    proposal = attacked_proposal()
    home = home_view(waiting=[proposal], owned=[], decisions=[], now=NOW)
    View(**home).validate_json()
    assert_nothing_interpreted(home)
    detail = proposal_detail_blocks(proposal, [], now=NOW)
    assert_nothing_interpreted(detail)


# --- whatever the agent writes, the message's own lines stay its own ------------------------------

_OUR_TOKENS = re.compile(r"<@U0REQUESTER>|<!date\^\d+\^\{date_short_pretty\} at \{time\}\|[^>]*>")
agent_text = st.text(
    alphabet=st.one_of(st.sampled_from("*_~`:<>&@!|#\n\u202e\u200d"), st.characters()),
    min_size=1,
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(title=agent_text, value=agent_text, reason=agent_text, run_id=agent_text)
def test_no_agent_text_adds_a_token_or_a_line_of_countersigns(
    title: str, value: str, reason: str, run_id: str
) -> None:
    proposal = make_proposal(
        preview=Preview(title=title, fields=(PreviewField(label="Memo", value=value),)),
        agent_reason=reason,
        run_id=run_id,
    )
    message = render.proposal_message(proposal, now=NOW)
    texts = mrkdwn_texts(message)
    for text in [*texts, message["text"]]:
        assert "<" not in _OUR_TOKENS.sub("", text)
    assert len(our_lines(texts)) == 3  # the risk, why you are asked, requested by
    assert not any(
        unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp")
        for c in json.dumps(message, ensure_ascii=False)
    )
