"""Loading the configuration: the example file, every kind of problem, and the Slack secrets."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from bot.settings import AgentSettings, ConfigError, Settings, SlackSettings, load_settings

EXAMPLE = Path(__file__).parents[3] / "examples" / "countersign.toml"

SUPPORT_TOKEN = "support-bot-token-0123456789"
OPS_TOKEN = "ops-bot-token-abcdefghijklmn"
ENV = {
    "SUPPORT_TOKEN": SUPPORT_TOKEN,
    "OPS_TOKEN": OPS_TOKEN,
    "CRM_SECRET": "crm-secret-0123456789",
}

#: A small valid file; tests replace or append sections to break one thing at a time.
SERVER = """
[server]
port = 8080
"""
ROLES = """
[roles]
finance = ["U0FINANCE1", "W0FINANCE2"]
"""
AGENTS = """
[agents.support-bot]
token_env = "SUPPORT_TOKEN"
acts_for = ["U0FINANCE1"]

[agents.ops-bot]
token_env = "OPS_TOKEN"
acts_for = ["U0FINANCE1"]
callback_url_prefixes = ["https://agents.example.com/", "http://127.0.0.1:9000/"]
"""
OPERATIONS = """
[operations."payments.refund"]
kind = "refund"
payments = [{ payment_id = "pay_1", customer = "cus_1", amount_cents = 4500, currency = "USD" }]

[operations."crm.send_campaign"]
kind = "webhook"
description = "Email a campaign to a customer segment"
url = "http://127.0.0.1:9000/campaigns/send"
secret_env = "CRM_SECRET"
preview = { title = "Email segment {segment}" }

[operations."crm.send_campaign".request_schema]
type = "object"
required = ["segment"]
properties = { segment = { type = "string" } }
"""
POLICY = """
[[policy]]
id = "refunds"
operation = "payments.refund"
when = [{ field = "amount_cents", lte = 100000 }]
decision = "ask"
approvers = ["finance"]
channel = "C0APPROVALS"

[[policy]]
id = "campaigns"
operation = "crm.send_campaign"
decision = "ask"
approvers = ["finance"]
channel = "C0APPROVALS"
"""


def write(tmp_path: Path, *sections: str) -> Path:
    path = tmp_path / "countersign.toml"
    path.write_text("\n".join(textwrap.dedent(section) for section in sections), encoding="utf-8")
    return path


def valid_sections(**replace: str) -> list[str]:
    sections = {
        "server": SERVER,
        "roles": ROLES,
        "agents": AGENTS,
        "operations": OPERATIONS,
        "policy": POLICY,
    }
    sections.update(replace)
    return list(sections.values())


def problems_of(path: Path, env: dict[str, str] | None = None) -> list[str]:
    """The problems, each checked to name its line and given back without it (``file: ...``);
    the lines themselves are checked in tests/bot/settings/test_lines.py."""
    with pytest.raises(ConfigError) as caught:
        load_settings(path, ENV if env is None else env)
    assert str(caught.value) == "\n".join(caught.value.problems)
    placed = re.compile(rf"{re.escape(str(path))}:[1-9][0-9]*: ")
    whole_file = (f"{path}: no such file", f"{path}: cannot be read")  # no line to name
    for problem in caught.value.problems:
        assert placed.match(problem) or problem.startswith(whole_file), f"no line: {problem!r}"
    return [placed.sub(f"{path}: ", problem, count=1) for problem in caught.value.problems]


def only_problem(path: Path, env: dict[str, str] | None = None) -> str:
    problems = problems_of(path, env)
    assert len(problems) == 1, problems
    [problem] = problems
    assert problem.startswith(f"{path}: "), problem
    return problem


# --- the example file -----------------------------------------------------------------------------


def test_example_file_loads_with_the_variables_it_names() -> None:
    settings = load_settings(
        EXAMPLE,
        {
            "COUNTERSIGN_TOKEN_SUPPORT_BOT": "example-support-token-0123",
            "COUNTERSIGN_WEBHOOK_SECRET_CRM": "example-crm-secret",
        },
    )

    assert settings.path == EXAMPLE
    assert settings.registry.names() == ("payments.refund", "crm.send_campaign")
    assert list(settings.agents) == ["support-bot"]
    assert settings.agents["support-bot"].token == "example-support-token-0123"
    # without callback_secret_env, callbacks are signed with the agent's token
    assert settings.agents["support-bot"].callback_secret == "example-support-token-0123"
    assert settings.roles == {
        "finance": frozenset({"U0FINANCE1", "U0FINANCE2"}),
        "support": frozenset({"U0SUPPORT1"}),
        "marketing-leads": frozenset({"U0MARKETING1"}),
    }
    assert [rule.id for rule in settings.policy.rules] == [
        "small-refunds",
        "refunds",
        "huge-refunds",
        "campaigns",
    ]
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8080)
    # relative to the file's folder, not to where the tests run
    assert settings.store.url == f"sqlite:///{EXAMPLE.parent / 'countersign.sqlite'}"


def test_example_file_without_its_variables_names_both() -> None:
    problems = problems_of(EXAMPLE, {})

    assert len(problems) == 2, problems
    assert "agents.support-bot.token_env" in problems[0]
    assert "COUNTERSIGN_TOKEN_SUPPORT_BOT is not set" in problems[0]
    assert "operations.crm.send_campaign.secret_env" in problems[1]
    assert "'COUNTERSIGN_WEBHOOK_SECRET_CRM', which is not set" in problems[1]


def test_slack_settings_come_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())
    env = {
        **ENV,
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_SIGNING_SECRET": "signing",
        "SLACK_APP_TOKEN": "xapp-1",
        "SLACK_API_URL": "http://127.0.0.1:9999/api",
    }

    slack = load_settings(path, env).slack

    assert slack == SlackSettings(
        bot_token="xoxb-1",
        signing_secret="signing",
        app_token="xapp-1",
        api_url="http://127.0.0.1:9999/api/",
    )
    assert slack.missing() == []


def test_slack_api_url_defaults_to_slack_and_empty_values_count_as_unset(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())

    slack = load_settings(path, {**ENV, "SLACK_BOT_TOKEN": "", "SLACK_API_URL": ""}).slack

    assert slack == SlackSettings(None, None, None, "https://slack.com/api/")


def test_missing_slack_secrets_are_named_with_where_to_get_them() -> None:
    missing = SlackSettings(None, None, None, "https://slack.com/api/").missing()

    assert len(missing) == 2
    assert missing[0].startswith("SLACK_BOT_TOKEN is not set")
    assert "'OAuth & Permissions'" in missing[0]
    assert missing[1].startswith("SLACK_SIGNING_SECRET is not set")
    assert "'Basic Information'" in missing[1]


def test_only_the_absent_slack_secret_is_named() -> None:
    missing = SlackSettings("xoxb-1", None, None, "https://slack.com/api/").missing()

    assert [problem.split()[0] for problem in missing] == ["SLACK_SIGNING_SECRET"]


def test_config_path_defaults_to_countersign_config_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())

    settings = load_settings(None, {**ENV, "COUNTERSIGN_CONFIG": str(path)})

    assert settings.path == path


# --- agents -------------------------------------------------------------------------------------


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(write(tmp_path, *valid_sections()), ENV)


def test_agent_for_token_finds_the_agent_holding_it(settings: Settings) -> None:
    support = settings.agent_for_token(SUPPORT_TOKEN)
    ops = settings.agent_for_token(OPS_TOKEN)

    assert support is not None and support.name == "support-bot"
    assert ops is not None and ops.name == "ops-bot"


def test_agent_for_an_unknown_token_is_none(settings: Settings) -> None:
    assert settings.agent_for_token("not-a-configured-token") is None
    assert settings.agent_for_token(SUPPORT_TOKEN[:-1]) is None
    assert settings.agent_for_token("") is None


def test_callback_secret_comes_from_its_own_variable_when_named(tmp_path: Path) -> None:
    agents = """
    [agents.support-bot]
    token_env = "SUPPORT_TOKEN"
    acts_for = ["U0FINANCE1"]
    callback_secret_env = "SUPPORT_CALLBACK_SECRET"
    """
    path = write(tmp_path, *valid_sections(agents=agents, policy=""))

    settings = load_settings(path, {**ENV, "SUPPORT_CALLBACK_SECRET": "callback-secret"})

    assert settings.agents["support-bot"].callback_secret == "callback-secret"


def test_agent_without_prefixes_may_name_no_callback_url() -> None:
    # Before, no prefixes meant "any URL": an agent could make Countersign POST anywhere.
    agent = AgentSettings("a", "t" * 16, "s")

    assert not agent.allows_callback("https://anywhere.example.net/hook")
    assert not agent.allows_callback("")


def test_agent_with_prefixes_may_only_name_urls_under_them(settings: Settings) -> None:
    agent = settings.agents["ops-bot"]

    assert agent.callback_url_prefixes == (
        "https://agents.example.com/",
        "http://127.0.0.1:9000/",
    )
    assert agent.callback_allow_private is False
    assert agent.allows_callback("https://agents.example.com/done")
    assert agent.allows_callback("https://AGENTS.example.com:443/done")  # the same origin
    assert agent.allows_callback("https://agents.example.com")  # its root, "/"
    assert agent.allows_callback("http://127.0.0.1:9000/callbacks/1")
    assert not agent.allows_callback("https://agents.example.com.evil.net/done")
    assert not agent.allows_callback("https://agents.example.com:8443/done")
    assert not agent.allows_callback("http://agents.example.com/done")
    assert not agent.allows_callback("http://127.0.0.1:9001/callbacks/1")
    assert not agent.allows_callback("https://agents.example.com@evil.example/done")


def test_callback_allow_private_is_read_per_agent(tmp_path: Path) -> None:
    agents = """
    [agents.support-bot]
    token_env = "SUPPORT_TOKEN"
    acts_for = ["U0FINANCE1"]
    callback_url_prefixes = ["http://127.0.0.1:9000/hooks"]
    callback_allow_private = true
    """
    path = write(tmp_path, *valid_sections(agents=agents, policy=""))

    agent = load_settings(path, ENV).agents["support-bot"]

    assert agent.callback_allow_private is True


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("agents.example.com/hooks", "expected an absolute http:// or https:// URL"),
        ("ftp://agents.example.com/", "expected an absolute http:// or https:// URL"),
        ("https://bot:hunter2@agents.example.com/", "must not contain a user name or password"),
        ("https://agents.example.com/hooks?token=abc", "must not contain a query or a fragment"),
        ("https://agents.example.com/hooks#x", "must not contain a query or a fragment"),
    ],
)
def test_callback_url_prefix_that_is_not_an_absolute_plain_url_is_refused_at_load(
    tmp_path: Path, prefix: str, expected: str
) -> None:
    agents = f"""
    [agents.support-bot]
    token_env = "SUPPORT_TOKEN"
    acts_for = ["U0FINANCE1"]
    callback_url_prefixes = ["{prefix}"]
    """
    path = write(tmp_path, *valid_sections(agents=agents, policy=""))

    problem = only_problem(path)

    assert problem.startswith(f"{path}: agents.support-bot.callback_url_prefixes: ")
    assert expected in problem
    assert "hunter2" not in problem and "token=abc" not in problem


# --- problems, one at a time ----------------------------------------------------------------------


def test_missing_file_says_how_to_name_one(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"

    assert problems_of(path) == [
        f"{path}: no such file (pass --config PATH or set COUNTERSIGN_CONFIG)"
    ]


def test_invalid_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nport = = 1\n")

    problem = only_problem(path)

    assert problem.startswith(f"{path}: not valid TOML: ")
    assert "line 2" in problem


def test_file_that_is_not_utf8_cannot_be_read(tmp_path: Path) -> None:
    path = tmp_path / "countersign.toml"
    path.write_bytes(b"[server]\nhost = '\xff'\n")

    assert only_problem(path).startswith(f"{path}: cannot be read: ")


def test_unknown_top_level_key_lists_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "polcy = []\n", *valid_sections())

    problem = only_problem(path)

    assert problem == (
        f"{path}: polcy: unknown key "
        "(expected one of: server, store, approvals, escalation, audit, slack, delegation, limits, "
        "monitoring, retention, roles, agents, operations, policy)"
    )


def test_unknown_server_key_lists_the_server_keys(tmp_path: Path) -> None:
    server = """
    [server]
    prot = 8080
    """
    path = write(tmp_path, *valid_sections(server=server))

    problem = only_problem(path)

    assert problem.startswith(f"{path}: server.prot: unknown key (expected one of: host, port, ")
    assert "long_poll_max_seconds" in problem


def test_unknown_agent_key_lists_the_agent_keys(tmp_path: Path) -> None:
    agents = """
    [agents.support-bot]
    token_env = "SUPPORT_TOKEN"
    acts_for = ["U0FINANCE1"]
    callback_prefixes = ["https://a.example.com/"]
    """
    path = write(tmp_path, *valid_sections(agents=agents, policy=""))

    assert only_problem(path) == (
        f"{path}: agents.support-bot.callback_prefixes: unknown key "
        "(expected one of: token_env, extra_token_envs, owners, acts_for, delegation, "
        "callback_secret_env, callback_url_prefixes, callback_allow_private, limits)"
    )


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        (65536, "expected a number of at most 65535, got 65536"),
        (-1, "expected a number of at least 0, got -1"),
    ],
)
def test_port_out_of_range_names_the_bound_and_the_value(
    tmp_path: Path, port: int, expected: str
) -> None:
    server = f"""
    [server]
    port = {port}
    """
    path = write(tmp_path, *valid_sections(server=server))

    problem = only_problem(path)

    assert problem == f"{path}: server.port: {expected}"


def test_agent_token_variable_not_set_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())
    env = {k: v for k, v in ENV.items() if k != "OPS_TOKEN"}

    assert only_problem(path, env) == (
        f"{path}: agents.ops-bot.token_env: environment variable OPS_TOKEN is not set "
        "(it holds the agent's bearer token)"
    )


def test_short_agent_token_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())

    problem = only_problem(path, {**ENV, "OPS_TOKEN": "fifteen-chars.."})

    assert problem == (
        f"{path}: agents.ops-bot.token_env: the token in OPS_TOKEN is too short "
        "(at least 16 characters)"
    )


def test_token_of_sixteen_characters_is_long_enough(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())

    settings = load_settings(path, {**ENV, "OPS_TOKEN": "sixteen-chars..."})

    assert settings.agents["ops-bot"].token == "sixteen-chars..."


def test_two_agents_sharing_a_token_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())

    problem = only_problem(path, {**ENV, "OPS_TOKEN": SUPPORT_TOKEN})

    assert problem == (
        f"{path}: agents.ops-bot.token_env: agents 'support-bot' and 'ops-bot' share a token; "
        "each agent needs its own"
    )
    assert SUPPORT_TOKEN not in problem


def test_callback_secret_variable_not_set_is_named(tmp_path: Path) -> None:
    agents = """
    [agents.support-bot]
    token_env = "SUPPORT_TOKEN"
    acts_for = ["U0FINANCE1"]
    callback_secret_env = "SUPPORT_CALLBACK_SECRET"
    """
    path = write(tmp_path, *valid_sections(agents=agents, policy=""))

    assert only_problem(path) == (
        f"{path}: agents.support-bot.callback_secret_env: environment variable "
        "SUPPORT_CALLBACK_SECRET is not set"
    )


def test_role_member_that_is_not_a_slack_user_id_is_named(tmp_path: Path) -> None:
    roles = """
    [roles]
    finance = ["U0FINANCE1", "alice@example.com", "u0lower"]
    """
    path = write(tmp_path, *valid_sections(roles=roles))

    assert only_problem(path) == (
        f"{path}: roles.finance: ['alice@example.com', 'u0lower'] are not Slack user ids or user "
        "group ids (expected U... or W... for people, S... for a user group)"
    )


def test_unknown_operation_kind_lists_the_kinds(tmp_path: Path) -> None:
    operations = """
    [operations."payments.refund"]
    kind = "refund"
    payments = []

    [operations."crm.send_campaign"]
    kind = "http"
    url = "http://127.0.0.1:9000/"
    """
    path = write(tmp_path, *valid_sections(operations=operations))

    assert only_problem(path) == (
        f"{path}: operations.crm.send_campaign.kind: expected 'refund', 'webhook' or "
        "'decision' (got 'http')"
    )


def test_operation_without_a_kind_says_so(tmp_path: Path) -> None:
    operations = """
    [operations."payments.refund"]
    payments = []
    """
    path = write(tmp_path, *valid_sections(operations=operations, policy=""))

    assert only_problem(path) == (
        f"{path}: operations.payments.refund.kind: required key is missing (expected "
        "'refund', 'webhook' or 'decision')"
    )


def test_webhook_secret_variable_not_set_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, *valid_sections())
    env = {k: v for k, v in ENV.items() if k != "CRM_SECRET"}

    # the campaigns rule names the operation that could not be built: not reported again
    assert only_problem(path, env) == (
        f"{path}: operations.crm.send_campaign.secret_env: expected the name of an environment "
        "variable holding the HMAC secret for the target (got 'CRM_SECRET', which is not set)"
    )


def test_refund_option_problem_names_the_operation(tmp_path: Path) -> None:
    operations = """
    [operations."payments.refund"]
    kind = "refund"
    payment = []
    """
    path = write(tmp_path, *valid_sections(operations=operations, policy=""))

    assert only_problem(path) == (
        f"{path}: operations.payments.refund: unknown option payment (expected: payments)"
    )


def test_policy_rule_naming_an_unknown_field_names_the_rule_and_the_field(
    tmp_path: Path,
) -> None:
    policy = """
    [[policy]]
    id = "refunds"
    operation = "payments.refund"
    when = [{ field = "amount", lte = 100000 }]
    decision = "deny"
    reason = "Refunds go through the manual process."
    """
    path = write(tmp_path, *valid_sections(policy=policy))

    problem = only_problem(path)

    assert problem.startswith(
        f"{path}: policy rule 'refunds': field 'amount' is not an argument of operation "
        "'payments.refund' (it has: "
    )
    assert "amount_cents" in problem


def test_policy_rule_naming_an_agent_that_is_not_configured_is_refused(tmp_path: Path) -> None:
    policy = """
    [[policy]]
    id = "support-refunds"
    operation = "payments.refund"
    agents = ["billing-bot"]
    decision = "deny"
    reason = "Refunds go through the manual process."
    """
    path = write(tmp_path, *valid_sections(policy=policy))

    assert only_problem(path) == (
        f"{path}: policy rule 'support-refunds': field 'agents': unknown agent 'billing-bot' "
        "(configured agents: ops-bot, support-bot)"
    )


def test_policy_rule_may_name_an_agent_whose_token_is_missing(tmp_path: Path) -> None:
    policy = """
    [[policy]]
    id = "ops-refunds"
    operation = "payments.refund"
    agents = ["ops-bot"]
    decision = "deny"
    reason = "Refunds go through the manual process."
    """
    path = write(tmp_path, *valid_sections(policy=policy))
    env = {k: v for k, v in ENV.items() if k != "OPS_TOKEN"}

    # only the token is a problem; the rule names a configured agent
    assert "OPS_TOKEN is not set" in only_problem(path, env)


# --- problems, all at once ------------------------------------------------------------------------


def test_every_problem_in_the_file_is_listed_in_one_error(tmp_path: Path) -> None:
    roles = """
    [roles]
    finance = ["finance-team"]
    """
    policy = """
    [[policy]]
    id = "refunds"
    operation = "payments.refund"
    when = [{ field = "amount", lte = 100000 }]
    decision = "ask"
    approvers = ["finance"]
    channel = "C0APPROVALS"

    [[policy]]
    id = "campaigns"
    operation = "crm.send_campaign"
    agents = ["marketing-bot"]
    decision = "auto"
    """
    path = write(tmp_path, *valid_sections(roles=roles, policy=policy))
    env = {"SUPPORT_TOKEN": "short", "OPS_TOKEN": OPS_TOKEN}

    problems = problems_of(path, env)

    expected = [
        "roles.finance: ['finance-team'] are not Slack user ids",
        "agents.support-bot.token_env: the token in SUPPORT_TOKEN is too short",
        "operations.crm.send_campaign.secret_env: expected the name of an environment variable",
        "policy rule 'refunds': field 'amount' is not an argument of operation",
        "policy rule 'campaigns': field 'agents': unknown agent 'marketing-bot'",
    ]
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(f"{path}: {start}"), problem


def test_every_problem_of_the_file_shape_is_listed_in_one_error(tmp_path: Path) -> None:
    server = """
    [server]
    port = 70000
    colour = "blue"
    callback_attempts = 0
    """
    path = write(tmp_path, "extra = true\n", *valid_sections(server=server))

    problems = problems_of(path)

    located = sorted(problem.removeprefix(f"{path}: ").split(":")[0] for problem in problems)
    assert located == ["extra", "server.callback_attempts", "server.colour", "server.port"]
