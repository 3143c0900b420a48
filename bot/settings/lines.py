"""Where in a TOML document each key is defined: the line ``check-config`` names beside a problem.

tomllib gives values without positions, so this reads the document's text once more, only far
enough to know where each key path starts: a table ``[a.b]``, each element of an array of tables
``[[policy]]`` (counted from 0, as the parsed list is), dotted keys ``a.b = 1``, the keys of an
inline table ``batch = { window = "30m" }`` and the elements of an array, also one written over
several lines. A key path is a tuple of keys and indexes, as pydantic's error locations are:
``("policy", 2, "batch", "window")``.

It reads documents tomllib has accepted. Anything it does not follow makes it answer None for
every key, never a line that might be wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["KeyLines", "KeyPath", "key_lines"]

KeyPath = tuple[str | int, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
#: a number, boolean, date or time (one space may part a date from its time)
_SCALAR = re.compile(r"[A-Za-z0-9+_.:-]+(?: [0-9][0-9:.+Z-]*)?")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Unfollowed(Exception):
    """The text holds something this reader does not follow."""


class KeyLines:
    """The line (from 1) where each key path of one document is first defined."""

    def __init__(self, lines: dict[KeyPath, int]) -> None:
        self._lines = lines

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line defining ``path`` exactly, or None when it is not written in the document
        (a default, a missing key) or the document could not be followed."""
        return self._lines.get(tuple(path))


def key_lines(text: str) -> KeyLines:
    """Where each key path of ``text`` (a TOML document tomllib accepts) is defined."""
    try:
        return KeyLines(_Reader(text).read())
    except (_Unfollowed, IndexError):
        return KeyLines({})


class _Reader:
    def __init__(self, text: str) -> None:
        self._text = text.replace("\r\n", "\n")
        self._at = 0
        self._lines: dict[KeyPath, int] = {}
        #: each array of tables by its resolved path: how many elements it has so far
        self._arrays: dict[KeyPath, int] = {}

    # --- the document ------------------------------------------------------------------------

    def read(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self._skip_blank_lines()
            if self._at >= len(self._text):
                return self._lines
            line = self._line()
            if self._text.startswith("[[", self._at):
                self._at += 2
                keys = self._key(end="]")
                self._expect("]]")
                parent = self._resolved(keys[:-1])
                array = (*parent, keys[-1])
                index = self._arrays.get(array, 0)
                self._arrays[array] = index + 1
                table = (*array, index)
                self._define(array, line)
                self._lines[table] = line
            elif self._peek() == "[":
                self._at += 1
                keys = self._key(end="]")
                self._expect("]")
                table = self._resolved(keys)
                self._define(table, line)
            else:
                self._key_value(table)
            self._end_of_line()

    def _resolved(self, keys: Sequence[str]) -> KeyPath:
        """A header's keys with the last element of each array of tables they pass through."""
        path: KeyPath = ()
        for key in keys:
            path = (*path, key)
            if path in self._arrays:
                path = (*path, self._arrays[path] - 1)
        return path

    def _define(self, path: KeyPath, line: int) -> None:
        """``path`` and each of its tables not defined yet start on ``line``."""
        for end in range(1, len(path) + 1):
            self._lines.setdefault(path[:end], line)

    def _key_value(self, table: KeyPath) -> None:
        line = self._line()
        keys = self._key(end="=")
        self._expect("=")
        path = (*table, *keys)
        self._define(path, line)
        self._skip_spaces()
        self._value(path)

    # --- values ------------------------------------------------------------------------------

    def _value(self, path: KeyPath) -> None:
        char = self._peek()
        if char == '"' or char == "'":
            self._string()
        elif char == "[":
            self._array(path)
        elif char == "{":
            self._inline_table(path)
        else:
            start = self._at
            while self._at < len(self._text) and self._text[self._at] not in ",]}\n#":
                self._at += 1
            if not _SCALAR.fullmatch(self._text[start : self._at].rstrip(" \t")):
                raise _Unfollowed

    def _array(self, path: KeyPath) -> None:
        self._at += 1
        index = 0
        while True:
            self._skip_blank_lines()
            if self._peek() == "]":
                self._at += 1
                return
            element = (*path, index)
            self._lines.setdefault(element, self._line())
            self._value(element)
            index += 1
            self._skip_blank_lines()
            if self._peek() == ",":
                self._at += 1
            elif self._peek() != "]":
                raise _Unfollowed

    def _inline_table(self, path: KeyPath) -> None:
        self._at += 1
        self._skip_spaces()
        if self._peek() == "}":
            self._at += 1
            return
        while True:
            self._skip_spaces()
            self._key_value(path)
            self._skip_spaces()
            if self._peek() == ",":
                self._at += 1
            elif self._peek() == "}":
                self._at += 1
                return
            else:
                raise _Unfollowed

    # --- keys and strings --------------------------------------------------------------------

    def _key(self, end: str) -> tuple[str, ...]:
        """A dotted key, each part bare or quoted, up to ``end`` (not taken)."""
        keys: list[str] = []
        while True:
            self._skip_spaces()
            char = self._peek()
            if char == '"' or char == "'":
                keys.append(self._string())
            else:
                start = self._at
                while self._peek() in _BARE:
                    self._at += 1
                if start == self._at:
                    raise _Unfollowed
                keys.append(self._text[start : self._at])
            self._skip_spaces()
            if self._peek() == ".":
                self._at += 1
            elif self._peek() == end:
                return tuple(keys)
            else:
                raise _Unfollowed

    def _string(self) -> str:
        quote = self._text[self._at]
        if self._text.startswith(quote * 3, self._at):
            close = self._text.find(quote * 3, self._at + 3)
            while quote == '"' and close != -1 and _escaped(self._text, close):
                close = self._text.find(quote * 3, close + 1)
            if close == -1:
                raise _Unfollowed
            # up to two more quotes may end the string's content before its closing three
            close += 3
            while self._text.startswith(quote, close):
                close += 1
            self._at = close
            return ""  # a multi-line string is a value, never a key
        self._at += 1
        chars: list[str] = []
        while True:
            char = self._text[self._at]
            if char == "\n":
                raise _Unfollowed
            self._at += 1
            if char == quote:
                return "".join(chars)
            if char == "\\" and quote == '"':
                chars.append(self._escape())
            else:
                chars.append(char)

    def _escape(self) -> str:
        code = self._text[self._at]
        self._at += 1
        if code in _ESCAPES:
            return _ESCAPES[code]
        width = {"u": 4, "U": 8}.get(code)
        if width is None:
            raise _Unfollowed
        digits = self._text[self._at : self._at + width]
        self._at += width
        try:
            return chr(int(digits, 16))
        except ValueError:
            raise _Unfollowed from None

    # --- whitespace, comments, lines ---------------------------------------------------------

    def _peek(self) -> str:
        return self._text[self._at] if self._at < len(self._text) else ""

    def _line(self) -> int:
        return self._text.count("\n", 0, self._at) + 1

    def _expect(self, token: str) -> None:
        self._skip_spaces()
        if not self._text.startswith(token, self._at):
            raise _Unfollowed
        self._at += len(token)

    def _skip_spaces(self) -> None:
        while self._peek() in (" ", "\t"):
            self._at += 1

    def _skip_blank_lines(self) -> None:
        """Spaces, newlines and comments."""
        while True:
            self._skip_spaces()
            char = self._peek()
            if char == "\n":
                self._at += 1
            elif char == "#":
                newline = self._text.find("\n", self._at)
                self._at = len(self._text) if newline == -1 else newline
            else:
                return

    def _end_of_line(self) -> None:
        self._skip_spaces()
        if self._peek() == "#":
            newline = self._text.find("\n", self._at)
            self._at = len(self._text) if newline == -1 else newline
        if self._peek() not in ("\n", ""):
            raise _Unfollowed


def _escaped(text: str, at: int) -> bool:
    """The character at ``at`` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1
