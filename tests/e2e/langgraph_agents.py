"""A LangChain agent for the adapter's tests: LangChain's own fake chat model scripted with tool
calls, two tools, and HumanInTheLoopMiddleware reviewing them. No network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig
from langchain.agents.middleware.human_in_the_loop import InterruptMode
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool


class ScriptedChatModel(GenericFakeChatModel):
    """GenericFakeChatModel answering with its scripted messages (tool calls included),
    whatever tools it is given."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def calls(*made: tuple[str, dict[str, Any]]) -> AIMessage:
    """The model's turn making ``made`` tool calls (name, args), with ids call_0, call_1, ..."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}
            for n, (name, args) in enumerate(made)
        ],
    )


@dataclass
class Tools:
    """The agent's tools, recording what actually ran."""

    refunds: list[dict[str, Any]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)

    def all(self) -> list[BaseTool]:
        @tool
        def send_refund(order_id: str, amount_cents: int) -> str:
            """Refund part of an order to the customer."""
            self.refunds.append({"order_id": order_id, "amount_cents": amount_cents})
            return f"refunded {amount_cents} cents on {order_id}"

        @tool
        def lookup_order(order_id: str) -> str:
            """Read an order."""
            self.lookups.append(order_id)
            return f"{order_id}: paid 4500 cents"

        return [send_refund, lookup_order]


def refund_agent(
    script: Sequence[AIMessage], tools: Tools, checkpointer: Any, *, mode: InterruptMode = "batched"
) -> Any:
    """An agent whose model says ``script``, one message a turn; both tools are reviewed."""
    review: InterruptOnConfig = {"allowed_decisions": ["approve", "edit", "reject"]}
    return create_agent(
        ScriptedChatModel(messages=iter(script)),
        tools=tools.all(),
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"send_refund": review, "lookup_order": review},
                interrupt_mode=mode,
            )
        ],
        checkpointer=checkpointer,
    )


def tool_messages(output: dict[str, Any]) -> list[ToolMessage]:
    messages: list[BaseMessage] = output["messages"]
    return [m for m in messages if isinstance(m, ToolMessage)]
