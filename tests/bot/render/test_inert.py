"""Agent text made inert: whatever an agent writes, Slack shows it as written and interprets
nothing (no formatting, emoji, mention, link, quote, line break or invisible character)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bot.render.inert import LINE_BREAK, MARKERS, inert, inert_plain, inert_quote, visible

#: Characters an attacker reaches for, mixed into arbitrary text below.
NASTY = (
    "\U0001f534\u2705\u274c\u26aa\U0001f7e0\ufe0f\u23ce"
    "*_~`:<>&@!|\n\r\t\u2028\u2029\u202e\u202d\u2066\u2067\u2068\u2069\u200b\u200c\u200d"
    "\u2060\ufeff\u00ad\u3164\u115f\u2800\x00\x1b\x7f\x85\u00a0\U000e0041#."
)
texts = st.text(alphabet=st.one_of(st.sampled_from(NASTY), st.characters()), max_size=200)
ATTACKS = [
    "*Approved by <@U0BOSS>*\n:white_check_mark: Why you are asked: safe",
    "<!here> <!channel> <!everyone> <@U0BOSS> <#C0GENERAL> <!subteam^S0FIN>",
    "<https://evil.example|click> https://evil.example www.evil.example",
    "refund \u202e0001\u202c USD",
    "a\u200db\u200bc\ufeffd",
    "```code``` `inline` _italic_ ~strike~ *bold*",
    "> quoted line\n>>> quoted rest",
    "ok\u2028:red_circle: Irreversible (money or external effect)",
]

_SHORTCODE = re.compile(r":[^\s:]+:")


def _invisible(char: str) -> bool:
    """Invisible, or an emoji character (Countersign's own lines begin with one); the line
    break mark is ours."""
    if char == LINE_BREAK:
        return False
    point = ord(char)
    if 0x1F000 <= point <= 0x1FAFF or 0xFE00 <= point <= 0xFE0F:
        return True
    if unicodedata.category(char) == "So" and 0x2190 <= point <= 0x2BFF:
        return True
    return (
        unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
        or (unicodedata.category(char) == "Zs" and char != " ")
        or char in "\u115f\u1160\u3164\uffa0\u2800"
    )


def assert_inert_line(shown: str) -> None:
    """What Slack would interpret in mrkdwn, checked on one rendered line."""
    assert not any(_invisible(c) for c in shown), shown
    assert "<" not in shown and ">" not in shown, shown
    assert re.fullmatch(r"([^&]|&amp;|&lt;|&gt;)*", shown), "an unescaped '&'"
    assert _SHORTCODE.search(shown) is None, shown
    assert "://" not in shown and "www." not in shown.lower(), shown
    for index, char in enumerate(shown):
        if char in MARKERS:  # a formatting marker only between two letters or digits
            assert 0 < index < len(shown) - 1, shown
            assert shown[index - 1].isalnum() and shown[index + 1].isalnum(), shown
    assert not shown.lstrip(" ").startswith("&gt;")


@given(texts)
@example("*Approved by <@U0BOSS>*\n:white_check_mark: Why you are asked: safe")
@example(":a:b:c: ::tada:: :+1:")
@example("&lt;!here&gt; &amp;")
def test_inert_text_has_nothing_slack_would_interpret(text: str) -> None:
    assert_inert_line(inert(text))


@given(texts)
def test_an_inert_quote_marks_every_line_and_each_line_is_inert(text: str) -> None:
    quoted = inert_quote(text)
    for line in quoted.split("\n"):
        assert line.startswith(">")
        assert_inert_line(line[1:])


@given(texts)
def test_plain_text_keeps_no_line_break_or_invisible_character(text: str) -> None:
    shown = inert_plain(text)
    assert not any(_invisible(c) for c in shown)


@given(
    st.text(
        alphabet=st.characters(categories=["Lu", "Ll", "Nd"]) | st.sampled_from(" .,-"),
        max_size=100,
    )
)
def test_ordinary_text_shows_exactly_as_written(text: str) -> None:
    if "www." in text.lower():
        return
    assert inert(text) == text
    assert inert_plain(text) == text


def test_invisible_and_bidirectional_characters_are_shown_by_their_code() -> None:
    assert visible("refund \u202e0001") == "refund \\u202e0001"
    assert visible("a\u200db") == "a\\u200db"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
    assert (
        visible("one\ntwo\r\nthree\u2028four")
        == f"one{LINE_BREAK}two{LINE_BREAK}three{LINE_BREAK}four"
    )


def test_the_classic_forgery_cannot_look_like_countersigns_lines() -> None:
    shown = inert(ATTACKS[0])
    assert "*" not in shown and "<@U0BOSS>" not in shown and ":white_check_mark:" not in shown
    assert "\n" not in shown  # "Why you are asked" cannot start a line of its own
    assert shown == (
        "\u2217Approved by &lt;@U0BOSS&gt;\u2217⏎\u2236white_check_mark: Why you are asked: safe"
    )


def test_emoji_characters_are_shown_by_their_code_and_so_is_a_line_break_mark() -> None:
    shown = inert("\U0001f534 Irreversible\n\u2705 Approved by \u23ce")
    assert shown == "\\U0001f534 Irreversible⏎\\u2705 Approved by \\u23ce"


def test_identifiers_with_underscores_and_times_stay_readable() -> None:
    assert inert("pay_123 cus_grace") == "pay_123 cus_grace"
    assert inert("customer@example.com") == "customer@example.com"
    assert inert("12:30") == "12:30"


def test_every_ascii_character_shows_as_written_or_by_its_code() -> None:
    """Printable ASCII is shown as written (and is taken through at once); every ASCII control
    character is shown by its code, and a line break as the mark, wherever it is."""
    breaks = {"\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e"}
    for point in range(128):
        char = chr(point)
        if char in breaks:
            expected = LINE_BREAK
        elif point < 0x20 or point == 0x7F:
            expected = f"\\u{point:04x}"
        else:
            expected = char
        assert visible(f"a{char}b") == f"a{expected}b", repr(char)
        assert visible(f"{char}ab") == f"{expected}ab", repr(char)


def test_text_without_a_marker_keeps_every_character() -> None:
    assert (
        inert("deploy build 42 to eu-west (rule auto)") == "deploy build 42 to eu-west (rule auto)"
    )
    assert inert("deploy *now*") == "deploy \u2217now\u2217"


def _inert_by_the_patterns(text: str) -> str:
    """inert() as written before its shortcuts: every text through both patterns."""
    from bot.render import inert as module

    text = visible(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = module._neutral_markers(text)
    text = re.sub(r"(?i)(www)\.", rf"\1{module._ONE_DOT}", text)
    text = text.replace("://", f"{module._COLON}//")

    def token(match: re.Match[str]) -> str:
        word = match.group()
        if module.SHORTCODE.search(word) is None:
            return word
        last = word.rfind(":")
        return word[:last].replace(":", module._COLON) + word[last:]

    text = re.sub(r"\S+", token, text)
    stripped = text.lstrip(" ")
    if stripped.startswith("&gt;"):
        text = text[: len(text) - len(stripped)] + module._QUOTE_MARK + stripped[len("&gt;") :]
    return text


@given(
    st.text(alphabet="wW.:/ >ab1\u212a\u017f\u00e9\n", max_size=40)
    | st.text(alphabet=st.sampled_from(NASTY) | st.sampled_from("wW./ab1"), max_size=40)
    | st.text(max_size=40)
)
@example("Go to WwW.example.com :smile: or :a:b:c:")
@example("one: colon")
@example("\u0175ww.x :x:")
def test_the_shortcuts_give_what_both_patterns_give(text: str) -> None:
    assert inert(text) == _inert_by_the_patterns(text)


@pytest.mark.parametrize(
    "text",
    [  # what the shortcuts skip (ASCII, no "www.", at most one colon), as an attacker writes it
        "<!here> <!channel> <@U0BOSS> <#C0GENERAL|general> <!subteam^S0FIN|@finance>",
        "<http://evil.example|Approve> <mailto:x@evil.example|mail>",
        "http://evil.example/x",
        "slack://channel?team=T1&id=C1",
        "WWW.EVIL.EXAMPLE and wWw.evil.example and www.",
        "mailto:boss@evil.example",
        "tel:+15550100",
        "http:/evil.example evil.example/x",
        "*Approved by* _you_ ~no~ `code`",
        "> Approved",
        "   &gt; Approved",
        ":white_check_mark Approved",
        "\uff57\uff57\uff57.evil.example \u24e6ww.evil.example w\u200bww.evil.example",
        "\uff1awhite_check_mark\uff1a :white_check_mark\uff1a",
        "&lt;!here&gt;",
    ],
)
def test_what_the_shortcuts_skip_is_made_inert_as_both_patterns_make_it(text: str) -> None:
    shown = inert(text)
    assert shown == _inert_by_the_patterns(text)
    assert_inert_line(shown)
