"""Block Kit for "Review all…": every pending item of a digest in full, approved with one submit.

Pure, like bot/render/digest.py. The modal lists the items that were pending when it opened,
each under Countersign's own number for it (the number of its line in the digest message), in
full as the Show full modal shows a proposal (bot/render/full.py: the preview, every frozen
argument, the agent's words labelled and inert, the binding hash), nothing clipped; under each,
a box that is ticked: clear it to leave the item out. When the items do not fit in one view
(100 blocks) or are more than :data:`ITEMS_PER_PAGE`, the modal pages with Previous and Next
(views.update); an item longer than a page continues on the next, its box after its last block.

The modal's ``private_metadata`` (:class:`ReviewState`) carries what was reviewed: the digest,
the page shown, each reviewed item's place in the digest with the start of the binding hash
shown for it, and the items left out on pages not shown now. Submitting approves each reviewed
item still selected only if its binding hash still starts so (bot/digests/review.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.render.actions import DIGEST_REVIEW_PAGE, DIGEST_REVIEW_VIEW
from bot.render.blocks import Blocks, modal, plain, section
from bot.render.digest_table import compact_table, total_text
from bot.render.full import proposal_in_full
from bot.render.inert import Mrkdwn, own
from bot.render.status import status_word
from contracts.formats import Formats
from store.digests import Digest
from store.proposals import Proposal, Status

__all__ = [
    "HASH_SHOWN",
    "ITEMS_PER_PAGE",
    "METADATA_MAX",
    "REVIEW_BOX",
    "Page",
    "ReviewState",
    "box_block_id",
    "box_place",
    "chosen_places",
    "review_modal",
    "review_pages",
    "review_state",
]

#: Items shown in full on one page of the modal (fewer when their blocks do not fit).
ITEMS_PER_PAGE: Final = 5
#: Slack's limits: blocks in a view, characters of private_metadata.
VIEW_BLOCKS_MAX: Final = 100
METADATA_MAX: Final = 3000
#: Hex digits of an item's binding hash the modal remembers (64 bits: a review of one contract
#: never approves another).
HASH_SHOWN: Final = 16
#: The action id of every item's box (its block id, :func:`box_block_id`, names the item).
REVIEW_BOX: Final = "review_item"
_BOX_PREFIX: Final = "review_"
#: Blocks of a page that are not an item's: the head, and Previous / Next.
_PAGE_FRAME: Final = 2


class ReviewState(BaseModel):
    """What a review modal carries in its ``private_metadata``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    digest: str = Field(min_length=1, max_length=200)
    page: int = Field(ge=1)
    #: (place of the item in the digest, from 0; the start of its binding hash), in order
    items: tuple[tuple[int, str], ...] = Field(min_length=1)
    #: places of the items whose box was cleared on a page not shown now
    left_out: tuple[int, ...] = ()

    def dump(self) -> str:
        text = json.dumps(
            {
                "d": self.digest,
                "p": self.page,
                "i": [list(pair) for pair in self.items],
                "x": sorted(self.left_out),
            },
            separators=(",", ":"),
        )
        if len(text) > METADATA_MAX:
            raise ValueError(f"a review of {len(self.items)} items does not fit in a modal")
        return text

    @classmethod
    def parse(cls, text: str) -> ReviewState:
        """The state a modal carries; ValueError names what is wrong with it."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict) or set(raw) != {"d", "p", "i", "x"}:
                raise ValueError("expected an object with d, p, i and x")
            return cls.model_validate(
                {
                    "digest": raw["d"],
                    "page": raw["p"],
                    "items": tuple(tuple(pair) for pair in raw["i"]),
                    "left_out": tuple(raw["x"]),
                },
                strict=False,
            )
        except (ValueError, TypeError, ValidationError) as error:
            raise ValueError(f"private_metadata: not a digest review's state ({error})") from None

    @property
    def places(self) -> list[int]:
        return [place for place, _ in self.items]

    def selected(self, on_page: Mapping[int, bool]) -> ReviewState:
        """This state with the boxes of the page shown (``on_page``: place -> ticked) read."""
        reviewed = set(self.places)
        left_out = {p for p in self.left_out if p not in on_page}
        left_out |= {p for p, ticked in on_page.items() if not ticked and p in reviewed}
        return self.model_copy(update={"left_out": tuple(sorted(left_out))})

    def at_page(self, page: int) -> ReviewState:
        return self.model_copy(update={"page": page})


def review_state(digest: Digest) -> ReviewState:
    """The state of a review of ``digest``'s pending items, on its first page, all selected."""
    return ReviewState(
        digest=digest.id,
        page=1,
        items=tuple(
            (place, p.binding_hash[:HASH_SHOWN])
            for place, p in enumerate(digest.items)
            if p.status is Status.PENDING
        ),
    )


def box_block_id(place: int) -> str:
    return f"{_BOX_PREFIX}{place}"


def box_place(block_id: str) -> int | None:
    """The item a box's block id names, or None for another block."""
    rest = block_id.removeprefix(_BOX_PREFIX)
    return int(rest) if rest != block_id and rest.isdigit() else None


@dataclass(frozen=True)
class Page:
    blocks: Blocks
    places: tuple[int, ...]  #: the items whose box is on this page


def review_pages(digest: Digest, state: ReviewState, formats: Formats) -> list[Page]:
    """Every reviewed item in full, with its box, cut into pages (at most
    :data:`ITEMS_PER_PAGE` items and 98 blocks each; a longer item continues on the next)."""
    room = VIEW_BLOCKS_MAX - _PAGE_FRAME
    pages: list[list[dict[str, Any]]] = [[]]
    boxes: list[list[int]] = [[]]
    for place, _ in state.items:
        proposal = digest.items[place]
        selected = place not in state.left_out
        part = [
            *proposal_in_full(proposal, _heading(place + 1, proposal), formats),
            _box(place, place + 1, selected),
        ]
        if pages[-1] and (len(pages[-1]) + len(part) > room or len(boxes[-1]) >= ITEMS_PER_PAGE):
            pages.append([])
            boxes.append([])
        while len(part) > room - len(pages[-1]):
            take = room - len(pages[-1])
            pages[-1] += part[:take]
            part = part[take:]
            pages.append([])
            boxes.append([])
        pages[-1] += part
        boxes[-1].append(place)
    return [Page(b, tuple(p)) for b, p in zip(pages, boxes, strict=True)]


def review_modal(digest: Digest, state: ReviewState, formats: Formats) -> dict[str, Any]:
    """The page ``state.page`` of the review of ``digest`` (pages past the last show the last)."""
    pages = review_pages(digest, state, formats)
    page = min(state.page, len(pages))
    state = state.at_page(page)
    shown = pages[page - 1]
    reviewed = [digest.items[place] for place in state.places]
    table = compact_table(reviewed, formats)
    total = total_text(table, len(reviewed), len(reviewed))
    head = (
        f"Review the *{len(reviewed):,}* proposals that were pending"
        + (f" (page {page} of {len(pages)})" if len(pages) > 1 else "")
        + ". Each is shown in full, numbered as in the digest; an approval covers exactly what "
        "is shown. Every one is selected: *clear the box of any you leave out*. "
        "*Approve selected* approves the others, each checked and executed on its own; any "
        "you may not approve is named in the answer and stays pending."
    )
    if total is not None:
        head += f"\n{total}"
    blocks: Blocks = [section(own(head)), *shown.blocks]
    if len(pages) > 1:
        blocks.append(_pager(page, len(pages)))
    return modal(
        DIGEST_REVIEW_VIEW,
        f"Review {len(reviewed):,} proposals",
        metadata=state.dump(),
        submit="Approve selected",
        blocks=blocks,
    )


def _heading(number: int, proposal: Proposal) -> Mrkdwn:
    state = "" if proposal.status is Status.PENDING else f" · now {status_word(proposal)}"
    return own(f"*Item {number}*{state}\n")


def _box(place: int, number: int, selected: bool) -> dict[str, Any]:
    option = {"text": plain(f"Approve item {number}", 75), "value": str(place)}
    element: dict[str, Any] = {"type": "checkboxes", "action_id": REVIEW_BOX, "options": [option]}
    if selected:
        element["initial_options"] = [option]
    return {
        "type": "input",
        "block_id": box_block_id(place),
        "optional": True,
        "label": plain(f"Item {number}: approve it with the others?", 2000),
        "element": element,
    }


def _pager(page: int, pages: int) -> dict[str, Any]:
    elements = []
    if page > 1:
        elements.append(_page_button("← Previous", page - 1))
    if page < pages:
        elements.append(_page_button("Next →", page + 1))
    return {"type": "actions", "block_id": "review_pages", "elements": elements}


def _page_button(text: str, page: int) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": DIGEST_REVIEW_PAGE,
        "text": plain(text, 75),
        "value": str(page),
    }


def chosen_places(values: Mapping[str, Any], state: ReviewState) -> dict[int, bool]:
    """The boxes of the page a submission or a page click came from: place -> ticked. Only
    the reviewed items' boxes count; an item's box is ticked when its own value is chosen."""
    reviewed = set(state.places)
    found: dict[int, bool] = {}
    for block_id, actions in values.items():
        place = box_place(block_id)
        if place is None or place not in reviewed or not isinstance(actions, dict):
            continue
        box = actions.get(REVIEW_BOX)
        if not isinstance(box, dict):
            continue
        chosen: Sequence[Any] = box.get("selected_options") or []
        found[place] = any(isinstance(o, dict) and o.get("value") == str(place) for o in chosen)
    return found
