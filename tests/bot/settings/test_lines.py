"""Where each key of a TOML document is defined, and check-config naming each problem's line."""

from __future__ import annotations

import json
import textwrap
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.settings.lines import KeyPath, key_lines
from tests.bot.settings.test_settings import problems_of, valid_sections, write
from tests.e2e.harness import ENV, config_text

TRICKY = textwrap.dedent(
    """\
    # a comment with [brackets] and key = "value"
    title = "a [not] table" # trailing comment
    "quoted.key" = 1
    a.b.c = 'literal # not a comment'
    text = \"\"\"
    [not_a_table]
    fake = 1
    \"\"\"

    [server]
    port = 8080
    [[policy]]
    id = "first"
    batch = { window = "30m", max = { hard = 5 } }
    when = [
      # a comment inside the array
      { field = "amount_cents", lte = 100 },

      { field = "currency", in = ["EUR",
                                  "USD"] },
    ]
    [[policy]]
    id = "second"
    [policy.then]
    after = "50%"
    [[policy]]
    [ operations . "crm.send_campaign" ]
    url = "https://x.example/\\"]\\"" # an escaped quote
    """
)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("title",), 2),
        (("quoted.key",), 3),
        (("a",), 4),
        (("a", "b", "c"), 4),
        (("text",), 5),
        (("server",), 10),
        (("server", "port"), 11),
        (("policy",), 12),
        (("policy", 0), 12),
        (("policy", 0, "batch", "window"), 14),
        (("policy", 0, "batch", "max", "hard"), 14),
        (("policy", 0, "when"), 15),
        (("policy", 0, "when", 0, "field"), 17),
        (("policy", 0, "when", 1, "in", 1), 20),
        (("policy", 1), 22),
        (("policy", 1, "id"), 23),
        (("policy", 1, "then", "after"), 25),
        (("policy", 2), 26),
        (("operations", "crm.send_campaign", "url"), 28),
    ],
)
def test_each_kind_of_definition_is_found_on_its_line(path: KeyPath, line: int) -> None:
    tomllib.loads(TRICKY)  # the document is valid TOML

    assert key_lines(TRICKY).line_of(path) == line


@pytest.mark.parametrize(
    "path",
    [
        ("not_a_table",),  # inside a multi-line string
        ("fake",),
        ("policy", 3),  # no fourth rule
        ("server", "host"),  # a default, not written
        ("policy", 0, "when", 2),
    ],
)
def test_a_key_not_written_has_no_line(path: KeyPath) -> None:
    assert key_lines(TRICKY).line_of(path) is None


def test_a_document_it_cannot_follow_gives_no_line_rather_than_a_wrong_one() -> None:
    # not TOML tomllib accepts: the reader must not guess
    assert key_lines("[server]\nport = = 1\n").line_of(("server", "port")) is None
    assert key_lines("[server\nport = 1\n").line_of(("server", "port")) is None


# --- any document: the lines a writer put each key on ---------------------------------------

_KEY = st.text(alphabet="abcXYZ09_-. 'é\"", min_size=1, max_size=6)
_SCALAR = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.text(alphabet="ab #=[]{}\"'\\,é", max_size=8),
)


class _Writer:
    """Writes a document line by line, keeping the line where it put each key path."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.where: dict[KeyPath, int] = {}

    def put(self, text: str, path: KeyPath | None = None) -> None:
        if path is not None:
            self.where.setdefault(path, len(self.lines) + 1)
        self.lines.extend(text.split("\n"))


def _key(name: str) -> str:
    bare = name and all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    return name if bare else json.dumps(name)


def _scalar(value: object, multiline: bool) -> str:
    if isinstance(value, str) and multiline and "\\" not in value and '"' not in value:
        return f'"""\n{value}\n# [not] = a key\n"""'
    return json.dumps(value)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[KeyPath, int]]:
    writer = _Writer()
    names = draw(st.lists(_KEY, min_size=1, max_size=6, unique=True))
    tables = []
    for name in names:
        kind = draw(st.sampled_from(["scalar", "inline", "array", "table", "tables"]))
        path = (name,)
        if kind == "scalar":
            writer.put(f"{_key(name)} = {_scalar(draw(_SCALAR), draw(st.booleans()))}", path)
        elif kind == "inline":
            inner = draw(st.dictionaries(_KEY, _SCALAR, max_size=3))
            for key in inner:
                writer.where[(*path, key)] = len(writer.lines) + 1
            body = ", ".join(f"{_key(k)} = {json.dumps(v)}" for k, v in inner.items())
            writer.put(f"{_key(name)} = {{ {body} }}", path)
        elif kind == "array":
            writer.put(f"{_key(name)} = [ # opens", path)
            for index, value in enumerate(draw(st.lists(_SCALAR, max_size=4))):
                if draw(st.booleans()):
                    writer.put("  # between elements")
                writer.put(f"  {_scalar(value, draw(st.booleans()))},", (*path, index))
            writer.put("]")
        else:
            tables.append((name, kind))
    for name, kind in tables:
        path = (name,)
        count = draw(st.integers(1, 3)) if kind == "tables" else 1
        for index in range(count):
            at = (*path, index) if kind == "tables" else path
            header = f"[[{_key(name)}]]" if kind == "tables" else f"[{_key(name)}]"
            writer.put("")
            writer.put(header, at)
            writer.where.setdefault(path, writer.where[at])
            for key, value in draw(st.dictionaries(_KEY, _SCALAR, max_size=3)).items():
                if draw(st.booleans()):  # a dotted key: sub.key = value
                    writer.put(f"sub.{_key(key)} = {json.dumps(value)}", (*at, "sub", key))
                    writer.where.setdefault((*at, "sub"), writer.where[(*at, "sub", key)])
                else:
                    writer.put(f"{_key(key)} = {json.dumps(value)}", (*at, key))
    return "\n".join(writer.lines) + "\n", writer.where


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_every_key_of_any_document_is_found_where_it_was_written(
    document: tuple[str, dict[KeyPath, int]],
) -> None:
    text, where = document
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:  # a table's "sub" key also written as a dotted one
        return
    lines = key_lines(text)

    for path, line in where.items():
        assert lines.line_of(path) == line, (path, text)


# --- check-config -----------------------------------------------------------------------------


def _line(text: str, start: str, after: str | None = None) -> int:
    lines = text.splitlines()
    first = 0 if after is None else lines.index(after)
    return next(n for n, line in enumerate(lines, 1) if n > first and line.startswith(start))


def test_check_config_names_the_line_of_each_independent_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    text = config_text("http://127.0.0.1:9")
    text = text.replace("[server]\n", "[server]\nprot = 8080\n", 1)  # an unknown key
    text = text.replace('approvers = ["finance"]', 'approvers = ["finanse"]', 1)  # unknown role
    text = text.replace(
        'expires_after = "30m"', 'expires_after = "30m"\nbatch = { window = "soon" }'
    )
    text = text.replace('support = ["', 'support = ["support-team", "', 1)  # a bad value
    text = text.replace("[server]\n", "[server]\nport = 70000\n", 1)  # one of the file's shape
    config = tmp_path / "countersign.toml"
    config.write_text(text, encoding="utf-8")

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    problems = [line.removeprefix("  - ") for line in err.splitlines()[1:]]
    expected = {
        _line(text, "prot = "): "server.prot: unknown key",
        _line(text, 'approvers = ["finanse"]'): "policy rule 'refunds': field 'approvers'",
        _line(text, "batch = "): "policy rule 'campaigns': field 'batch.window'",
        _line(text, "support = "): "roles.support: ['support-team'] are not Slack user ids",
        _line(text, "port = "): "server.port: expected a number of at most 65535, got 70000",
    }
    assert len(problems) == len(expected), problems
    for line, start in expected.items():
        assert any(p.startswith(f"{config}:{line}: {start}") for p in problems), (line, problems)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("-5", "server.shed_agents_at_loop_lag_ms: expected a number of at least 0, got -5"),
        ('"soon"', "server.shed_agents_at_loop_lag_ms: expected a number, got 'soon'"),
    ],
)
def test_check_config_names_the_line_of_a_bad_loop_lag_threshold(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    says: str,
) -> None:
    for name, env_value in ENV.items():
        monkeypatch.setenv(name, env_value)
    text = config_text("http://127.0.0.1:9").replace(
        "[server]\n", f"[server]\nshed_agents_at_loop_lag_ms = {value}\n", 1
    )
    config = tmp_path / "countersign.toml"
    config.write_text(text, encoding="utf-8")

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    assert f"  - {config}:{_line(text, 'shed_agents_at_loop_lag_ms')}: {says}" in err, err


def test_a_toml_syntax_error_names_its_line_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text('[server]\nport = 8080\nhost = "open\n', encoding="utf-8")

    code = main(["--config", str(config), "check-config"])

    err = capsys.readouterr().err
    assert code == 2
    assert f"  - {config}:3: not valid TOML: " in err, err


def test_a_bad_value_left_out_is_reported_once_and_hides_nothing(tmp_path: Path) -> None:
    sections = valid_sections(
        policy=valid_sections()[-1].replace('decision = "ask"', 'decision = "maybe"', 1)
    )
    text = "\n".join(sections) + textwrap.dedent(
        """
        [approvals]
        review_sample = 0.5
        review_channel = "#general"
        """
    )
    path = write(tmp_path, text)

    problems = problems_of(path)

    assert [problem.split(": ")[1] for problem in problems] == [
        "approvals.review_channel",  # not again as "required when review_sample is above 0"
        "policy rule 'refunds'",  # checked although the file's shape has a problem
    ], problems
