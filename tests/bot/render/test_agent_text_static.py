"""Read, not run: no renderer puts an agent-fed field into Slack text except through the inert
renderer (bot/render/inert.py and the helpers built on it: quote, code, said, header,
field_text, explanation, with_times).

Every module of bot/render is parsed. Wherever an agent-fed attribute (a preview's title,
label or value, the agent's reason or run id, an escalation's summary and signals, an
outcome's detail, reason or result, ...) flows into an f-string or straight into a Block Kit
builder, the path must pass through one of those functions first; clip and joins pass text
through unchanged, any other function takes the value as data (and is walked with hostile
values by test_hostile_values.py). A new renderer is read as soon as its module exists.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import bot.render

#: Attributes holding text an agent wrote, or a target answered, or built from them.
AGENT_FED = frozenset(
    {
        "title",
        "label",
        "value",
        "fields",
        "agent_reason",
        "run_id",
        "request",
        "arguments",
        "summary",
        "goal",
        "blocked_on",
        "steps_done",
        "tool_results",
        "result_summary",
        "tool",
        "conversation_id",
        "customer_ref",
        "team",
        "customer_quote",
        "error_codes",
        "topic_labels",
        "signals",
        "detail",
        "reason",
        "result",
        "correlation_id",
        "decision_note",
        "note",
        "policy_note",
        "agent",
        "approver_roles",
        "superseded_by",
    }
)
#: The inert renderer and the helpers that call it on what they are given.
INERT = frozenset(
    {
        "inert",
        "inert_quote",
        "inert_plain",
        "visible",
        "quote",
        "code",
        "said",
        "header",
        "field_text",
        "explanation",
        "with_times",
        "_code_block",
    }
)
#: Functions that hand their text on unchanged.
PASS_THROUGH = frozenset({"clip", "_clip_plain", "str", "join", "format", "strip"})
#: Block Kit builders: what reaches them is Slack text.
SINKS = frozenset(
    {"section", "context", "message", "_mrkdwn", "plain", "field_sections", "own", "Mrkdwn"}
)
#: Sites where an agent-fed attribute is read as data or made inert further on, with why.
KNOWN: dict[tuple[str, str], str] = {
    # an enum's value: the status is Countersign's
    ("*", "status.value"): "a status, Countersign's own",
    # the option row's fields go into said() with the title, a few lines below
    ("digest_clicks.py", "f.label"): "made inert by said() with the option text",
    ("digest_clicks.py", "f.value"): "made inert by said() with the option text",
    # an input's label is the operation's (its format hints, or its request schema's field
    # name written as words: contracts.formats.field_label), never the agent's, and it is shown
    # as plain text (edit.py's plain())
    ("edit_form.py", "field.label"): "the operation's own label, shown as plain text",
}


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _reaches_slack_raw(
    node: ast.AST, parents: dict[ast.AST, ast.AST], *, read: bool = False
) -> bool:
    """Whether ``node``'s value reaches Slack text (an f-string, a builder) and leaves its
    function, or reaches a builder, before any inert function takes it (``read``: ``node``
    reads a name already holding such text)."""
    current = node
    in_text = read
    while current in parents:
        parent = parents[current]
        if isinstance(parent, ast.Call) and current is not parent.func:
            name = _call_name(parent)
            if name in INERT:
                return False
            if name in SINKS:
                return True
            if name not in PASS_THROUGH:
                # data for another function (itself walked with hostile values); an f-string
                # handed to one is text, though
                return in_text
        if isinstance(parent, ast.FormattedValue):
            in_text = True
        if isinstance(parent, ast.Assign) and in_text:
            return _assigned_reaches_slack_raw(parent, parents)
        if isinstance(parent, ast.stmt):
            return in_text and isinstance(parent, ast.Return | ast.Expr)
        current = parent
    return False


def _assigned_reaches_slack_raw(assign: ast.Assign, parents: dict[ast.AST, ast.AST]) -> bool:
    """Text assigned to a name: raw if any reading of the name in its function reaches Slack
    text before an inert function."""
    names = {target.id for target in assign.targets if isinstance(target, ast.Name)}
    function: ast.AST | None = assign
    while function is not None and not isinstance(function, ast.FunctionDef):
        function = parents.get(function)
    if not names or function is None:
        return True
    readings = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)
    ]
    return any(_reaches_slack_raw(node, parents, read=True) for node in readings) or not readings


def raw_agent_text(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = _parents(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in AGENT_FED:
            continue
        if isinstance(parents.get(node), ast.Attribute):
            continue  # part of a longer reading (p.summary in p.summary.goal)
        shown = ast.unparse(node)
        if any(
            where in ("*", path.name) and shown.endswith(expression) for where, expression in KNOWN
        ):
            continue
        if _reaches_slack_raw(node, parents):
            found.append((node.lineno, f"{path.name}:{node.lineno}: {shown}"))
    yield from (problem for _, problem in sorted(found))


def modules() -> list[Path]:
    return sorted(Path(bot.render.__path__[0]).glob("*.py"))


def test_no_renderer_puts_agent_text_into_slack_text_but_through_the_inert_renderer() -> None:
    assert len(modules()) >= 10
    found = [problem for path in modules() for problem in raw_agent_text(path)]
    assert found == []


def test_only_the_inert_renderer_makes_slack_text_out_of_nothing() -> None:
    """``Mrkdwn(...)`` is called in bot/render/inert.py alone: elsewhere Slack text comes from
    the inert renderer or from ``own()`` (Countersign's words, read by the test above)."""
    calls = [
        f"{path.name}:{node.lineno}"
        for path in modules()
        if path.name != "inert.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and _call_name(node) == "Mrkdwn"
    ]
    assert calls == []


def test_the_reading_sees_agent_text_put_in_raw(tmp_path: Path) -> None:
    """Not blind: each way a raw value reaches Slack text is found."""
    source = tmp_path / "leaky.py"
    source.write_text(
        "def a(p):\n"
        "    return section(f'*{p.preview.title}*')\n"
        "def b(p):\n"
        "    return context(clip(p.agent_reason, 100))\n"
        "def c(p):\n"
        "    return f'{p.summary.goal} ok'\n"
        "def d(p):\n"
        "    return section(f'*{inert(p.preview.title)}*') if p.agent_reason else None\n"
        "def e(p):\n"
        "    what = f'{p.preview.title} ok'\n"
        "    return said(what, 10)\n"
        "def f(p):\n"
        "    what = f'{p.preview.title} ok'\n"
        "    return section(what)\n"
        "def g(p):\n"
        "    return section(own(p.agent_reason))\n",
        encoding="utf-8",
    )
    assert [line.split(": ")[1] for line in raw_agent_text(source)] == [
        "p.preview.title",
        "p.agent_reason",
        "p.summary.goal",
        "p.preview.title",
        "p.agent_reason",
    ]
