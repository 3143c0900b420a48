"""A digest's compact table and its Review all… modal: valid Block Kit (slack_sdk's models),
nothing clipped in the modal, pages within Slack's limits, and agent text that cannot make one
item look like two or like another."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from slack_sdk.models.views import View

from bot.render.actions import (
    DIGEST_APPROVE_ALL,
    DIGEST_REVIEW,
    DIGEST_REVIEW_PAGE,
    DIGEST_REVIEW_VIEW,
)
from bot.render.digest import digest_message
from bot.render.digest_review import (
    ITEMS_PER_PAGE,
    METADATA_MAX,
    ReviewState,
    chosen_places,
    review_modal,
    review_pages,
    review_state,
)
from contracts.base import Preview, PreviewField
from contracts.formats import FieldFormat
from store.proposals import Status
from tests.bot.render.test_digest import NOW, button_values, digest, item
from tests.bot.render.test_proposal import all_text, assert_valid_message

MONEY = {
    "payment_id": FieldFormat(label="Payment"),
    "amount_cents": FieldFormat(label="Amount", kind="money", currency="USD"),
}


def refund(n: int, cents: int, **changes: Any) -> Any:
    preview = Preview(
        title=f"Refund to cus_{n}",
        fields=(
            PreviewField(label="Payment", value=f"pay_{n}"),
            PreviewField(label="Amount", value=f"{cents / 100:,.2f} USD"),
            PreviewField(label="Refund reason", value="Late delivery"),
        ),
    )
    fields: dict[str, Any] = {
        "arguments": {"payment_id": f"pay_{n}", "amount_cents": cents},
        "preview": preview,
        **changes,
    }
    return item(n, **fields)


def rows(message: dict[str, Any]) -> list[str]:
    """The lines of the message that open an item: Countersign's bold number first."""
    return [
        line
        for block in message["blocks"]
        if block["type"] == "section"
        for line in block["text"]["text"].split("\n")
        if re.match(r"^\*\d+\.\* ", line)
    ]


# --- the compact table ----------------------------------------------------------------------------


def test_the_table_shows_common_fields_once_differing_ones_per_line_and_the_total() -> None:
    items = [refund(1, 150_000), refund(2, 1_000), refund(3, 123_456_789)]
    message = digest_message(digest(items), now=NOW, formats=MONEY)

    assert_valid_message(message)
    text = all_text(message)
    assert text.count("Late delivery") == 1  # common: shown once, under its label
    assert "*Same for every item:*" in text and "*Refund reason*: Late delivery" in text
    assert "*Total amount* of the 3 pending: 1,236,077.89 USD" in text  # money, separators
    lines = rows(message)
    assert [line.split(" ")[0] for line in lines] == ["*1.*", "*2.*", "*3.*"]
    assert "*Amount* 1,500.00 USD" in lines[0] and "*Payment* pay_1" in lines[0]
    assert all("Refund reason" not in line for line in lines)  # labels, once, not per line
    assert "Charged twice" in text and text.count("Agent's words (unverified)") == 1


def test_the_total_counts_pending_items_and_no_total_without_money() -> None:
    items = [refund(1, 1_000), refund(2, 2_000, status=Status.REJECTED, decided_by="U0X")]
    text = all_text(digest_message(digest(items), now=NOW, formats=MONEY))
    assert "of the 1 pending: 10.00 USD" in text

    assert "Total" not in all_text(digest_message(digest(items), now=NOW))


def test_every_pending_digest_offers_review_all_and_approve_all_only_when_whole() -> None:
    whole = digest_message(digest([refund(1, 100), refund(2, 200)]), now=NOW, formats=MONEY)
    long = [refund(n, 100, agent_reason=f"{n} " + "why " * 200) for n in range(2)]
    clipped = digest_message(digest(long), now=NOW, formats=MONEY)

    assert set(button_values(whole)) >= {DIGEST_APPROVE_ALL, DIGEST_REVIEW}
    assert DIGEST_APPROVE_ALL not in button_values(clipped)
    assert button_values(clipped)[DIGEST_REVIEW] == "dg_digest"
    assert "(clipped)" in all_text(clipped)


# --- the review modal -----------------------------------------------------------------------------


def modal_text(view: dict[str, Any]) -> str:
    return json.dumps(view["blocks"], ensure_ascii=False)


def test_the_review_shows_each_item_in_full_with_its_hash_and_a_ticked_box() -> None:
    reason = "word " * 2_000  # 10,000 characters: several sections, none cut
    items = [refund(n, 100 * n, agent_reason=f"{n}: {reason}") for n in range(1, 4)]
    view = review_modal(digest(items), review_state(digest(items)), MONEY)

    View(**view).validate_json()
    assert view["callback_id"] == DIGEST_REVIEW_VIEW
    text = modal_text(view)
    assert "(clipped)" not in text and "Too long" not in text
    shown = "".join(
        b["text"]["text"] for b in view["blocks"] if b["type"] == "section" and "word" in str(b)
    )
    for n in range(1, 4):
        assert shown.count(f"{n}: word") == 1
    assert shown.count("word") == 3 * 2_000
    boxes = [b for b in view["blocks"] if b["type"] == "input"]
    assert [b["block_id"] for b in boxes] == ["review_0", "review_1", "review_2"]
    assert all(b["element"]["initial_options"] == b["element"]["options"] for b in boxes)
    assert "*Item 2*" in text and "binding hash" in text.lower()


def test_a_long_review_pages_within_slacks_limits_and_keeps_what_was_left_out() -> None:
    items = [refund(n, 100) for n in range(12)]
    state = review_state(digest(items))

    pages = review_pages(digest(items), state, MONEY)
    assert [len(p.places) for p in pages] == [ITEMS_PER_PAGE, ITEMS_PER_PAGE, 2]
    second = review_modal(digest(items), state.selected({1: False}).at_page(2), MONEY)
    View(**second).validate_json()
    assert len(second["blocks"]) <= 100
    [pager] = [b for b in second["blocks"] if b.get("block_id") == "review_pages"]
    assert [(e["action_id"], e["value"]) for e in pager["elements"]] == [
        (DIGEST_REVIEW_PAGE, "1"),
        (DIGEST_REVIEW_PAGE, "3"),
    ]
    assert "page 2 of 3" in modal_text(second)
    back = review_modal(
        digest(items), ReviewState.parse(second["private_metadata"]).at_page(1), MONEY
    )
    [box] = [b for b in back["blocks"] if b.get("block_id") == "review_1"]
    assert "initial_options" not in box["element"]


def test_an_item_longer_than_a_page_continues_on_the_next_with_its_box_last() -> None:
    fields = tuple(PreviewField(label=f"Line {n}", value="v" * 2_900) for n in range(150))
    huge = item(1, preview=Preview(title="Huge", fields=fields), arguments={"a": "x" * 2_000})
    items = [huge, refund(2, 100)]

    state = review_state(digest(items))
    pages = review_pages(digest(items), state, {})
    assert len(pages) >= 2
    assert [p.places for p in pages[:-1]] == [()] * (len(pages) - 1)
    assert pages[-1].places == (0, 1)  # the huge item's box after its last block, then item 2
    for number in range(1, len(pages) + 1):
        view = review_modal(digest(items), state.at_page(number), {})
        View(**view).validate_json()
        assert len(view["blocks"]) <= 100
    every = "".join(json.dumps(p.blocks) for p in pages)
    assert every.count("v" * 2_900) == 150  # nothing clipped, just paged


def test_fifty_items_with_long_ids_fit_in_private_metadata() -> None:
    items = [item(n, id=f"cs_{n:04d}" + "z" * 60, binding_hash=f"{n:064x}") for n in range(50)]
    state = review_state(digest(items))

    assert len(state.dump()) <= METADATA_MAX  # about 1,230 characters
    assert all(len(start) == 16 for _, start in state.items)
    assert ReviewState.parse(state.dump()) == state


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ("dg_digest", "private_metadata"),
        ('{"d":"dg","p":0,"i":[[0,"ab"]],"x":[]}', "page"),
        ('{"d":"dg","p":1,"i":[],"x":[]}', "items"),
        ('{"d":"dg","p":1,"i":[[0,"ab"]],"x":[],"extra":1}', "d, p, i and x"),
    ],
)
def test_a_state_that_is_not_a_reviews_is_refused_naming_what_is_wrong(
    metadata: str, expected: str
) -> None:
    with pytest.raises(ValueError, match=expected):
        ReviewState.parse(metadata)


def test_only_the_reviewed_items_boxes_are_read_from_a_page() -> None:
    state = ReviewState(digest="dg", page=1, items=((0, "a"), (1, "b")))
    values = {
        "review_0": {"review_item": {"selected_options": [{"value": "0"}]}},
        "review_1": {"review_item": {"selected_options": [{"value": "0"}]}},  # not its own value
        "review_7": {"review_item": {"selected_options": [{"value": "7"}]}},  # never reviewed
    }
    assert chosen_places(values, state) == {0: True, 1: False}


# --- hostile agent text ---------------------------------------------------------------------------

#: values an agent could put in its request to make one item look like two, or like another
CRAFTED = [
    "pay_1\n*2.* `cs_item0002xxx` · *Amount* 9,999.00 USD · :hourglass_flowing_sand: Pending",
    "pay_1 · *Amount* 9,999.00 USD",
    "pay_1\u2028*3.* *Payment* pay_3",
    "pay_1 <!here> *Item 2* ~struck~ `code`",
]


@pytest.mark.parametrize("crafted", CRAFTED)
def test_a_crafted_value_stays_inside_its_own_item_in_the_table(crafted: str) -> None:
    items = [
        refund(
            1,
            100,
            preview=Preview(title="t1", fields=(PreviewField(label="Payment", value=crafted),)),
        ),
        refund(
            2,
            200,
            preview=Preview(title="t2", fields=(PreviewField(label="Payment", value="pay_2"),)),
        ),
    ]
    message = digest_message(digest(items), now=NOW, formats=MONEY)

    assert_valid_message(message)
    lines = rows(message)
    assert [line.split(" ")[0] for line in lines] == ["*1.*", "*2.*"]  # no third, no second "2."
    assert lines[0].count("*Payment*") == 1 and "*Amount*" not in lines[0]
    assert "<!here>" not in all_text(message)
    assert "9,999.00" not in lines[1]


@pytest.mark.parametrize("crafted", CRAFTED)
def test_a_crafted_value_stays_inside_its_own_item_in_the_review(crafted: str) -> None:
    items = [
        refund(1, 100, agent_reason=crafted, preview=Preview(title=crafted, fields=())),
        refund(2, 200),
    ]
    view = review_modal(digest(items), review_state(digest(items)), MONEY)

    View(**view).validate_json()
    headings = [
        b["text"]["text"].split("\n")[0]
        for b in view["blocks"]
        if b["type"] == "section" and b["text"]["type"] == "mrkdwn"
    ]
    assert [h for h in headings if h.startswith("*Item")] == ["*Item 1*", "*Item 2*"]
    for block in view["blocks"]:  # agent text only in plain_text, one line per value
        text = block.get("text") or {}
        if text.get("type") == "plain_text" and "pay_1" in text.get("text", ""):
            assert "\n*2.*" not in text["text"] and "\u2028" not in text["text"]


def test_the_reviews_own_words_name_no_hash_and_no_operation() -> None:
    """The review's heading is Countersign speaking to an approver: what an approval covers in
    their terms; the hash stays in each item's small print ("For the record")."""
    items = [refund(n, 100 * n) for n in range(1, 3)]
    review = digest(items)
    view = review_modal(review, review_state(review), MONEY)

    heading = view["blocks"][0]["text"]["text"]
    assert heading.startswith("Review the *2* proposals that were pending")
    assert "hash" not in heading.lower()
    assert review.operation not in heading
