"""An agent's token rotated without downtime: while both are configured, the old and the new
token each authenticate as that agent; a token of another agent, or one since removed, does not."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.harness import AGENT_TOKEN, OTHER_AGENT_TOKEN, REQUESTER, running_countersign

NEW_TOKEN = "agent-token-support-bot-rotated-4242"
CAMPAIGN = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
}


async def _submit(cs: object, token: str, key: str) -> tuple[int, dict[str, object]]:
    http, url = cs.http, cs.url  # type: ignore[attr-defined]
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}
    async with http.post(f"{url}/v1/proposals", json=CAMPAIGN, headers=headers) as answer:
        return answer.status, await answer.json(content_type=None)


async def test_old_and_new_token_both_act_as_the_agent_during_a_rotation(tmp_path: Path) -> None:
    async with running_countersign(
        tmp_path,
        env={"E2E_AGENT_TOKEN_NEW": NEW_TOKEN},
        agent_settings={"support-bot": {"extra_token_envs": ["E2E_AGENT_TOKEN_NEW"]}},
    ) as cs:
        old_status, old = await _submit(cs, AGENT_TOKEN, "k-old")
        new_status, new = await _submit(cs, NEW_TOKEN, "k-new")
        # the same agent: the same idempotency key under either token is the same proposal
        again_status, again = await _submit(cs, NEW_TOKEN, "k-old")
        other_status, other = await _submit(cs, OTHER_AGENT_TOKEN, "k-old")

    assert (old_status, new_status, again_status) == (201, 201, 200)
    assert old["agent"] == new["agent"] == "support-bot"
    assert again["id"] == old["id"]
    assert other_status == 201 and other["agent"] == "ops-bot" and other["id"] != old["id"]


async def test_a_token_removed_from_the_configuration_is_refused(tmp_path: Path) -> None:
    # the rotation's last step: the new token is the agent's only one
    async with running_countersign(tmp_path, env={"E2E_AGENT_TOKEN": NEW_TOKEN}) as cs:
        refused_status, refused = await _submit(cs, AGENT_TOKEN, "k-1")
        accepted_status, _ = await _submit(cs, NEW_TOKEN, "k-1")

    assert refused_status == 401 and "unknown agent token" in str(refused["detail"])
    assert accepted_status == 201
