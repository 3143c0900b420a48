"""``@requires_approval``: a function an agent may call runs only once people approved the call.

The call's arguments (defaults included) become the request of a decision operation whose
request schema names the function's parameters. The function runs with the arguments as
approved (an approver's edit included); otherwise it does not run, and the caller gets a typed
exception or, when ``refused`` is given, that message, for the model to read.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import JsonValue

from countersign.answers import Answer, Approved, Rejected
from countersign.client import AsyncClient
from countersign.errors import NotApproved
from countersign.sync import Client

__all__ = ["requires_approval"]

F = TypeVar("F", bound=Callable[..., Any])
_BOUND_NAMES = frozenset({"self", "cls"})


def requires_approval(
    operation: str,
    *,
    client: AsyncClient | Client | None = None,
    timeout: float | None = None,
    refused: str | None = None,
    requested_by: str | None = None,
    reason: str | None = None,
) -> Callable[[F], F]:
    """Guard a function (sync or async) with a decision operation.

    ``client``: an AsyncClient for an async function, a Client for a plain one; without it, one
    is made from the environment (``COUNTERSIGN_URL``, ``COUNTERSIGN_TOKEN``...) for each call.
    ``timeout``: the caller's deadline in seconds (default: the proposal's expiry).
    ``refused``: a message returned instead of raising NotApproved when the call is not
    approved; ``{reason}`` in it is replaced by what happened ("rejected by U0...: ...").
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(
                    f"requires_approval: {function.__qualname__} takes *{parameter.name}; "
                    "its arguments become a proposal's request, so every one needs a name"
                )
        asks: dict[str, Any] = {"timeout": timeout, "requested_by": requested_by, "reason": reason}

        if inspect.iscoroutinefunction(function):
            if isinstance(client, Client):
                raise TypeError(
                    f"requires_approval: {function.__qualname__} is async; pass an AsyncClient"
                )

            @functools.wraps(function)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                if client is not None:
                    answer = await client.ask(operation, _request(bound), **asks)
                else:
                    async with AsyncClient.from_env() as made:
                        answer = await made.ask(operation, _request(bound), **asks)
                if not isinstance(answer, Approved):
                    return _refusal(answer, refused)
                return await function(*_approved(bound, answer).args, **bound.kwargs)

            return cast(F, guarded_async)

        if isinstance(client, AsyncClient):
            raise TypeError(
                f"requires_approval: {function.__qualname__} is not async; pass a Client"
            )

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if client is not None:
                answer = client.ask(operation, _request(bound), **asks)
            else:
                with Client.from_env() as made:
                    answer = made.ask(operation, _request(bound), **asks)
            if not isinstance(answer, Approved):
                return _refusal(answer, refused)
            approved = _approved(bound, answer)
            return function(*approved.args, **approved.kwargs)

        return cast(F, guarded)

    return decorate


def _request(bound: inspect.BoundArguments) -> dict[str, JsonValue]:
    return {name: value for name, value in bound.arguments.items() if name not in _BOUND_NAMES}


def _approved(bound: inspect.BoundArguments, answer: Approved) -> inspect.BoundArguments:
    """``bound`` with each argument as approved (an approver may have edited it)."""
    for name in bound.arguments:
        if name in answer.arguments and name not in _BOUND_NAMES:
            bound.arguments[name] = answer.arguments[name]
    return bound


def _refusal(answer: Answer, refused: str | None) -> str:
    if refused is None:
        raise NotApproved(answer)
    reason = answer.reason if isinstance(answer, Rejected) else answer.describe()
    return refused.replace("{reason}", reason)
