"""Edit, then re-classify: an approver changes a pending proposal's request; the edit becomes a new
proposal that supersedes it.

The Edit button opens a modal (bot/render/edit.py) with the stored request's fields. On
submission the editor is checked again (the same click-time checks as Approve), the values are
read (bot/render/edit_form.py) and put through the operation's contract (parse_request, resolve)
and the policy, as a submission would be; the store then supersedes the old proposal and stores the
edit in one transaction (Store.supersede). The edit may run at once (auto), ask again (perhaps of
other people, elsewhere) or be denied; when the standing rule that covered it is used up or
revoked before it is stored, the database refuses it and it is classified again, as a submission
is. Its editor, like every editor before them, cannot decide it (bot/flow/lineage.py), nor
does a standing rule one of them granted approve it. These are the service's own verbs, kept
in a module of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.flow import standing
from bot.flow.intake import SubmissionKey
from bot.flow.lineage import editors_of
from bot.flow.service import Service
from bot.render import clicks as render
from bot.render import edit_form
from bot.render.edit import edit_modal
from contracts.api import SubmitBody
from contracts.base import ContractViolation, Operation
from store.base import StoreError, StoreUnavailable
from store.proposals import (
    AlreadyDecided,
    IdempotencyConflict,
    NotApprovable,
    Proposal,
    Status,
    Transitioned,
)

__all__ = ["EditAnswer", "EditFlow", "EditValues", "edit_submission_key"]

log = logging.getLogger(__name__)

#: What the modal says when the values are those already stored.
UNCHANGED = "Nothing was changed: edit a value, or close this and use Approve or Reject."


def edit_submission_key(proposal_id: str) -> str:
    """The submission key of the edit of ``proposal_id`` (there is at most one)."""
    return f"edit:{proposal_id}"


class EditValues(Protocol):
    """The edit modal, submitted: who, which proposal, and the inputs' state (the Slack
    listener decodes it, bot/slack/listeners.py ``EditSubmitted``)."""

    @property
    def user(self) -> str: ...
    @property
    def proposal_id(self) -> str: ...
    @property
    def values(self) -> Mapping[str, Mapping[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class EditAnswer:
    """How to answer the submission: with ``errors`` (the modal stays open; nothing changed), or
    by closing the modal; ``proposal`` is the stored edit, if one was stored."""

    errors: Mapping[str, str] = field(default_factory=dict)
    proposal: Proposal | None = None


class EditFlow:
    def __init__(self, service: Service) -> None:
        self._service = service

    async def begin(
        self, proposal_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """An Edit click: check the clicker, then open the modal with the stored request."""
        proposal = await self._editable(proposal_id, user=user, channel=channel)
        if proposal is None:
            return
        operation = self._operation(proposal)
        formats = operation.field_formats()
        form = edit_form.edit_form(
            operation.request_schema(), proposal.request, formats, proposal.arguments
        )
        modal = edit_modal(proposal, form, formats)
        await self._service.publisher.open_view(proposal, trigger_id, modal)

    async def submit(self, submitted: EditValues) -> EditAnswer:
        """The modal was submitted: check the editor again, the values, the contract and the
        policy; store the edit superseding the proposal. Errors leave everything unchanged."""
        service, user = self._service, submitted.user
        proposal = await self._editable(submitted.proposal_id, user=user, channel=None)
        if proposal is None:
            return EditAnswer()
        operation = self._operation(proposal)
        formats = operation.field_formats()
        form = edit_form.edit_form(
            operation.request_schema(), proposal.request, formats, proposal.arguments
        )
        request, errors = edit_form.read_request(form, proposal.request, submitted.values)
        if errors:
            return EditAnswer(errors=errors)
        if not form.fields:  # a form without inputs changes nothing (and has no Submit)
            return EditAnswer()
        if request == proposal.request:
            return EditAnswer(errors={form.fields[0].block_id: UNCHANGED})
        now = service.now()
        ctx = service.operation_context("edit", now)
        try:
            resolved = await operation.resolve(operation.parse_request(request), ctx)
        except ContractViolation as violation:
            shown = edit_form.problem_errors(form, violation.problems)
            if not shown:
                await service.tell(proposal, None, user, render.refusal_text(str(violation)))
            return EditAnswer(errors=shown)
        except Exception as error:  # the operation could not check it (its backend is down...)
            log.warning("checking the edit of %s failed: %s", proposal.id, error, exc_info=error)
            why = f"the edit could not be checked right now ({type(error).__name__}); try again"
            return EditAnswer(errors={form.fields[0].block_id: why})
        arguments = operation.dump_arguments(resolved.arguments)
        typed_in = edit_form.currency_errors(form, request, arguments, formats)
        if typed_in:
            return EditAnswer(errors=typed_in)
        body = SubmitBody(
            operation=operation.name,
            request=request,
            requested_by=proposal.requested_by,
            run_id=proposal.run_id,
            reason=proposal.agent_reason,
            callback_url=proposal.callback_url,
        )
        # the edit's own key: there is nothing to derive one from
        submission = SubmissionKey.of(
            body.model_dump(mode="json"), edit_submission_key(proposal.id), identity={}
        )
        # none of them may decide the edit, so no standing rule of theirs approves it
        editors = (user, *await editors_of(service.store, proposal))
        for attempt in range(1, standing.RACE_ATTEMPTS + 1):
            # frozen and classified again exactly as a submission is
            new = await service.frozen_contract(
                operation,
                resolved,
                body,
                submission,
                agent=proposal.agent,
                requested_by=proposal.requested_by,
                now=now,
                supersedes=proposal.id,
                edited_by=user,
                editors=editors,
            )
            try:
                result = await service.store.supersede(proposal.id, new, actor=user, now=now)
                break
            except IdempotencyConflict as conflict:
                why = f"the agent already used this edit's key for proposal {conflict.existing.id}"
                await service.tell(proposal, None, user, render.refusal_text(why))
                return EditAnswer()
            except StoreUnavailable:
                raise
            except StoreError:
                # its standing rule was used up or revoked by a concurrent call since it was
                # read (the database counts the uses; nothing was stored): classify it again
                if new.standing_rule_id is None or attempt == standing.RACE_ATTEMPTS:
                    raise
        if not isinstance(result, Transitioned):
            if isinstance(result, AlreadyDecided | NotApprovable):
                await service.not_claimed(result, user=user, channel=None)
            return EditAnswer()
        log.info("%s edited %s into %s (%s)", user, proposal.id, new.id, new.status.value)
        service.changed(await service.store.get_proposal(proposal.id))
        service.changed(result.proposal)
        return EditAnswer(proposal=result.proposal)

    async def finish(self, answer: EditAnswer) -> Proposal | None:
        """After the modal closed: run an edit the policy approved automatically, once."""
        edit = answer.proposal
        if edit is None or edit.status is not Status.EXECUTING:
            return edit
        return await self._service.execute(edit)

    # --- helpers ----------------------------------------------------------------------------

    async def _editable(
        self, proposal_id: str, *, user: str, channel: str | None
    ) -> Proposal | None:
        """The proposal if ``user`` may edit it now (pending, unexpired, and the checks of
        Approve); otherwise they are told why, and a refusal of the person is audited."""
        service = self._service
        proposal = await service.decidable(proposal_id, user=user, channel=channel, verb="edit")
        if proposal is None:
            return None
        if proposal.agent not in service.settings.agents:
            why = f"agent {proposal.agent!r} is no longer configured"
            await service.refuse(proposal, user=user, channel=channel, verb="edit", why=why)
            return None
        if proposal.expires_at is not None and proposal.expires_at <= service.now():
            expired = NotApprovable(proposal, f"expired at {proposal.expires_at.isoformat()}")
            await service.not_claimed(expired, user=user, channel=channel)
            return None
        return proposal

    def _operation(self, proposal: Proposal) -> Operation[Any, Any]:
        return self._service.settings.registry.get(proposal.operation)
