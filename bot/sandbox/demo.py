"""The demo workspace: its people and channels, its secrets, its configuration, its proposals."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

__all__ = [
    "AGENT",
    "CHANNELS",
    "DEMO_PROPOSALS",
    "PEOPLE",
    "REQUESTER",
    "SCENARIOS",
    "DemoProposal",
    "DemoRefused",
    "Person",
    "Secrets",
    "demo_config_text",
]

_URL_PLACEHOLDER: Final = "@SANDBOX_URL@"


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    name: str
    about: str  #: who they are in the demo, shown next to the name


#: The people of demo.toml's roles, and one who holds none.
PEOPLE: Final = (
    Person(
        "U0DANA",
        "Dana Reyes",
        "support lead; the agent asks on her behalf; takes escalated conversations",
    ),
    Person("U0PRIYA", "Priya Shah", "finance; approves refunds"),
    Person("U0MARCUS", "Marcus Lee", "finance; approves refunds"),
    Person("U0SAM", "Sam Okafor", "marketing lead; approves campaigns"),
    Person("U0ALEX", "Alex Kim", "engineer; no approver role"),
)
#: The accountable human of the demo agent's runs: she may never approve them herself.
REQUESTER: Final = "U0DANA"
#: The name of demo.toml's agent, whose proposals the page's agent panel shows.
AGENT: Final = "demo-agent"
#: (id, name) of demo.toml's approval channels and its escalation route's channel.
CHANNELS: Final = (
    ("C0FINANCE", "finance-approvals"),
    ("C0MARKETING", "marketing-approvals"),
    ("C0SUPPORT", "support-escalations"),
)


@dataclass(frozen=True, slots=True)
class Secrets:
    """Everything secret the sandbox needs, made fresh at every start."""

    signing_secret: str
    bot_token: str
    agent_token: str
    webhook_secret: str

    @classmethod
    def generate(cls, agent_token: str | None = None) -> Secrets:
        """New random secrets; ``agent_token`` keeps a token an agent already knows."""
        return cls(
            signing_secret=secrets.token_hex(16),
            bot_token="xoxb-sandbox-" + secrets.token_hex(12),
            agent_token=agent_token or "cs-sandbox-" + secrets.token_urlsafe(18),
            webhook_secret=secrets.token_hex(16),
        )

    def environment(self, slack_api_url: str) -> dict[str, str]:
        """The variables demo.toml and the Slack client read, and nothing else."""
        return {
            "SLACK_BOT_TOKEN": self.bot_token,
            "SLACK_SIGNING_SECRET": self.signing_secret,
            "SLACK_API_URL": slack_api_url,
            "COUNTERSIGN_SANDBOX_AGENT_TOKEN": self.agent_token,
            "COUNTERSIGN_SANDBOX_WEBHOOK_SECRET": self.webhook_secret,
        }


def demo_config_text(sandbox_url: str) -> str:
    """demo.toml with the sandbox's address in place (the webhook operation's demo target)."""
    text = resources.files("bot.sandbox").joinpath("demo.toml").read_text(encoding="utf-8")
    return text.replace(_URL_PLACEHOLDER, sandbox_url.rstrip("/"))


class DemoRefused(Exception):
    """The agent API refused a demo proposal (the demo configuration and proposals disagree)."""


@dataclass(frozen=True, slots=True)
class DemoProposal:
    label: str  #: the path it shows
    body: dict[str, Any]  #: a POST /v1/proposals body, without run_id
    path: str = "/v1/proposals"  #: or /v1/escalations (its body without conversation_id)


def _proposal(label: str, operation: str, request: dict[str, Any], reason: str) -> DemoProposal:
    body = {
        "operation": operation,
        "request": request,
        "requested_by": REQUESTER,
        "reason": reason,
    }
    return DemoProposal(label, body)


#: One proposal for every path through the policy table of demo.toml.
DEMO_PROPOSALS: Final = (
    _proposal(
        "auto-approved",
        "crm.tag_customers",
        {"segment": "lapsed-customers", "tag": "winback-2025", "customers": 120},
        "Tagging the lapsed customers lets support recognise them when they get in touch.",
    ),
    _proposal(
        "needs approval",
        "payments.refund",
        {"payment_id": "pay_1002", "amount_cents": 45000},
        "The order arrived damaged and the customer asked for a partial refund.",
    ),
    _proposal(
        "denied",
        "payments.refund",
        {"payment_id": "pay_1004"},
        "The customer cancelled the whole annual plan.",
    ),
    _proposal(
        "needs approval (webhook)",
        "crm.send_campaign",
        {"segment": "lapsed-customers", "template": "tmpl_winback_spring", "recipients": 1200},
        "Customers who have not ordered for 90 days usually come back after a win-back email.",
    ),
)


def _escalation() -> DemoProposal:
    body = {
        "customer_ref": "cus_grace",
        "summary": {
            "goal": "Replace the damaged headphones of order 1002",
            "steps_done": ["Looked up the order", "Offered a partial refund"],
            "tool_results": [
                {"tool": "payments.refund", "result_summary": "The customer declined it"}
            ],
            "blocked_on": "The customer wants a replacement sent today, which only people do",
        },
        "trigger": {
            "kind": "explicit_request",
            "signals": {"customer_quote": "Can I please talk to a person?"},
        },
    }
    return DemoProposal("escalation", body, "/v1/escalations")


#: The demo's other stories, each a button on the page (``POST /sandbox/scenario/<name>``).
SCENARIOS: Final = {
    # three similar refunds due together: one digest message, reviewed in full and approved from
    # Review all… (or items chosen with checkboxes)
    "digest": tuple(
        _proposal(
            "digest item",
            "payments.refund",
            {"payment_id": payment, "amount_cents": amount},
            "Goodwill refunds for the late deliveries of last week.",
        )
        for payment, amount in (("pay_1001", 1500), ("pay_1003", 1000), ("pay_1005", 2000))
    ),
    # three newsletters whose rule lets them wait: held for the rule's 20-second batch window,
    # then shown together in one digest in #marketing
    "batch": tuple(
        _proposal(
            "batched newsletter",
            "crm.send_campaign",
            {"segment": segment, "template": "tmpl_newsletter_june", "recipients": recipients},
            "The June newsletter for this region is ready to go.",
        )
        for segment, recipients in (
            ("newsletter-eu", 4200),
            ("newsletter-us", 6100),
            ("newsletter-apac", 1800),
        )
    ),
    # a customer asks for a person: posted in #support-escalations, taken and handed back there
    "escalation": (_escalation(),),
    # a flash-sale email must be decided within 2 minutes or never: it expires while you watch
    # (a button of its own, so that the demo a new user starts with never expires under them)
    "expiry": (
        _proposal(
            "expires in 2 minutes",
            "crm.send_campaign",
            {"segment": "flash-sale", "template": "tmpl_flash_sale", "recipients": 800},
            "The flash sale starts soon; this email announces it.",
        ),
    ),
    # the target answers later than the operation's timeout: a person says what happened
    "uncertain": (
        _proposal(
            "uncertain execution",
            "accounting.export_ledger",
            {"month": "2025-05"},
            "Accounting closes May this week and asked for the ledger.",
        ),
    ),
}
