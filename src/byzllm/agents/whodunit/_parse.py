"""Parse and validate a model's WhoDunitEnv reply: ReAct thoughts, then one JSON action.

Models write the JSON of Appendix F (Figs. 10, 13, 14) in many near-miss ways: inside code
fences, after free text, with ``//`` comments copied from the prompt, trailing commas, Python
``True``/``False``, numbers as strings, ``"Character 3"`` for ``3``. :func:`find_action_object`
is a small lenient JSON reader that accepts all of these and records, for every top-level
field, the character span of its value: the LLM agent maps the spans of the action number and
the character ids onto the token stream to find the *decision positions* (§4.1).

:func:`parse_action` validates the object against the agent's view (action numbers, character
ids, property names and values, fact numbers) and raises :class:`ActionParseError` with a
*hint* the agent is re-prompted with. Nothing here raises anything else on any input.
:func:`read_action` is the same parse as a :class:`~byzllm.agents._parsed.Parsed`: the
validated action, or the documented fallback (:data:`FALLBACK_ACTION`, a passed turn) with
``fell_back=True`` and the hint as its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from byzllm.errors import InputError

from .._parsed import Parsed
from .._thinking import after_thinking, blank_thinking
from ._types import AgentView, WhoDunitAction, action_kinds

__all__ = [
    "FALLBACK_ACTION",
    "MAX_REPLY_CHARS",
    "ActionParseError",
    "JsonField",
    "ParsedAction",
    "canonical",
    "find_action_object",
    "parse_action",
    "read_action",
]

#: Replies longer than this after a reasoning model's thinking are rejected outright (a
#: runaway or adversarial generation).
MAX_REPLY_CHARS = 65_536
#: At most this many ``{`` positions are tried as the start of the action object.
_MAX_CANDIDATES = 64
_MAX_DEPTH = 16

#: The documented fallback move when no valid action can be read: the turn is passed.
FALLBACK_ACTION = WhoDunitAction(kind="pass")


class ActionParseError(InputError):
    """A reply that is not a valid action; ``hint`` is what the agent is told on re-prompt."""

    def __init__(self, hint: str) -> None:
        super().__init__(hint)
        self.hint = hint


@dataclass
class JsonField:
    """One parsed JSON value and where it sits in the text.

    ``span`` covers the value's *content* (inside quotes for strings); ``items`` holds the
    element fields of an array value.
    """

    value: Any
    span: tuple[int, int]
    items: list[JsonField] = field(default_factory=list)


@dataclass
class ParsedAction:
    """A validated action, its thoughts and the character spans of its decision positions."""

    action: WhoDunitAction
    thoughts: str
    decision_spans: list[tuple[int, int]]


class _Fail(Exception):
    pass


_WS = " \t\r\n"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_BAREWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


class _Reader:
    """A lenient recursive-descent reader over ``text`` (never raises except ``_Fail``)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)

    def skip(self, i: int) -> int:
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c in _WS:
                i += 1
            elif s.startswith("//", i) or c == "#":
                nl = s.find("\n", i)
                i = n if nl < 0 else nl + 1
            elif s.startswith("/*", i):
                end = s.find("*/", i + 2)
                i = n if end < 0 else end + 2
            else:
                break
        return i

    def string(self, i: int) -> tuple[JsonField, int]:
        quote = self.s[i]
        j = i + 1
        out: list[str] = []
        s, n = self.s, self.n
        while j < n:
            c = s[j]
            if c == "\\" and j + 1 < n:
                nxt = s[j + 1]
                out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                j += 2
                continue
            if c == quote:
                return JsonField("".join(out), (i + 1, j)), j + 1
            out.append(c)
            j += 1
        raise _Fail

    def value(self, i: int, depth: int) -> tuple[JsonField, int]:
        if depth > _MAX_DEPTH:
            raise _Fail
        i = self.skip(i)
        if i >= self.n:
            raise _Fail
        c = self.s[i]
        if c in "\"'":
            return self.string(i)
        if c == "[":
            return self.array(i, depth)
        if c == "{":
            obj, end = self.obj(i, depth)
            return JsonField({k: v.value for k, v in obj.items()}, (i, end)), end
        m = _NUMBER.match(self.s, i)
        if m:
            text = m.group()
            try:
                number: Any = float(text) if any(ch in text for ch in ".eE") else int(text)
            except ValueError:  # an integer past Python's 4,300-digit conversion limit
                raise _Fail from None
            return JsonField(number, (i, m.end())), m.end()
        m = _BAREWORD.match(self.s, i)
        if m:
            word = m.group()
            low = word.lower()
            mapped: Any = {"true": True, "false": False, "null": None, "none": None}.get(low, word)
            return JsonField(mapped, (i, m.end())), m.end()
        raise _Fail

    def array(self, i: int, depth: int) -> tuple[JsonField, int]:
        items: list[JsonField] = []
        j = i + 1
        while True:
            j = self.skip(j)
            if j >= self.n:
                raise _Fail
            if self.s[j] == "]":
                return JsonField([it.value for it in items], (i, j + 1), items), j + 1
            if self.s[j] == ",":
                j += 1
                continue
            item, j = self.value(j, depth + 1)
            items.append(item)

    def obj(self, i: int, depth: int) -> tuple[dict[str, JsonField], int]:
        fields: dict[str, JsonField] = {}
        j = i + 1
        while True:
            j = self.skip(j)
            if j >= self.n:
                raise _Fail
            c = self.s[j]
            if c == "}":
                return fields, j + 1
            if c == ",":
                j += 1
                continue
            if c in "\"'":
                key_field, j = self.string(j)
                key = str(key_field.value)
            else:
                m = _BAREWORD.match(self.s, j)
                if not m:
                    raise _Fail
                key, j = m.group(), m.end()
            j = self.skip(j)
            if j >= self.n or self.s[j] not in ":=":
                raise _Fail
            val, j = self.value(j + 1, depth + 1)
            fields[key.strip().lower()] = val


def find_action_object(text: str) -> dict[str, JsonField] | None:
    """The last top-level JSON-like object in ``text`` with an ``"action"`` key, or ``None``.

    Keys are lower-cased. Objects nested inside an earlier candidate are not tried again.
    Reasoning blocks are blanked, and only the first :data:`MAX_REPLY_CHARS` characters after
    them are read (bounded time on any input).
    """
    text = after_thinking(text, MAX_REPLY_CHARS)
    reader = _Reader(text)
    found: dict[str, JsonField] | None = None
    pos = text.find("{")
    tried = 0
    while pos >= 0 and tried < _MAX_CANDIDATES:
        tried += 1
        try:
            fields, end = reader.obj(pos, 0)
        except (_Fail, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        if "action" in fields:
            found = fields
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found


def canonical(name: str) -> str:
    """Case-, space-, dash- and underscore-insensitive key used to match names and values."""
    return re.sub(r"[\s_\-]+", "", name.lower())


#: A suspect id written as text ("3", "#3", "suspect 3"), matched whole on the stripped
#: text. One run of blanks and ``#`` between word and digits: adjacent optional blanks
#: backtracked against each other (a reply of 4,000 spaces in a string took minutes).
_ID_TEXT = re.compile(r"(?:character|suspect|char|id)?[\s#]*(\d{1,6})", re.IGNORECASE)


def _as_int(f: JsonField | None) -> tuple[int, tuple[int, int]] | None:
    """An integer and the span of its digits, from a number or a numeric-looking string."""
    if f is None:
        return None
    v = f.value
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v, f.span
    if isinstance(v, float) and v.is_integer():
        return int(v), f.span
    if isinstance(v, str):
        stripped = v.lstrip()
        m = _ID_TEXT.fullmatch(stripped.rstrip())
        if m:
            start = f.span[0] + len(v) - len(stripped) + m.start(1)
            return int(m.group(1)), (start, start + len(m.group(1)))
    return None


def _as_bool(f: JsonField | None) -> bool | None:
    """A JSON boolean, or one spelled as a string (``"true"``, ``"yes"``, ``"false"``, ``"no"``)."""
    v = None if f is None else f.value
    if isinstance(v, str):
        v = {"true": True, "yes": True, "false": False, "no": False}.get(v.strip().lower())
    return v if isinstance(v, bool) else None


def _character(fields: dict[str, JsonField], view: AgentView) -> tuple[int, tuple[int, int]]:
    got = _as_int(fields.get("character"))
    if got is None:
        raise ActionParseError(
            f'"character" must be a single number between 1 and {view.n_suspects}.'
        )
    if not 1 <= got[0] <= view.n_suspects:
        raise ActionParseError(
            f'"character" {got[0]} does not exist: use a number between 1 and {view.n_suspects}.'
        )
    return got


def _property(raw: object, view: AgentView) -> str:
    if isinstance(raw, str):
        key = canonical(raw)
        for prop in view.attributes:
            if canonical(prop) == key:
                return prop
    raise ActionParseError(
        f'"property" must be one of: {", ".join(view.attributes)} (got {str(raw)[:40]!r}).'
    )


def _value(prop: str, raw: object, view: AgentView) -> str:
    values = view.attributes[prop]
    if isinstance(raw, str):
        key = canonical(raw)
        for value in values:
            if canonical(value) == key:
                return value
    raise ActionParseError(
        f'"value" for property {prop} must be one of: {", ".join(values)} (got {str(raw)[:40]!r}).'
    )


def _property_value(text: str, view: AgentView) -> tuple[str, str]:
    """Split Intel's ``"property-value"`` (values may contain dashes, e.g. ``button-up``)."""
    for cut in [m.start() for m in re.finditer(r"[-:=]", text)]:
        prop_part, value_part = text[:cut], text[cut + 1 :]
        try:
            prop = _property(prop_part, view)
            return prop, _value(prop, value_part, view)
        except ActionParseError:
            continue
    raise ActionParseError(
        '"value" of a broad message must be "property-value" with a known property and one of '
        f"its values, e.g. {next(iter(view.attributes))}-{next(iter(view.attributes.values()))[0]}"
        f" (got {text[:40]!r})."
    )


def parse_action(text: str, view: AgentView) -> ParsedAction:
    """Parse ``text`` into a validated action for ``view``'s role, or raise a hinted error."""
    # Offsets into the blanked reply are offsets into the reply: the spans stay valid.
    text = blank_thinking(text)
    # The reasoning does not count: a model may think at length before its one JSON object.
    length = len(text.strip())
    if length > MAX_REPLY_CHARS:
        raise ActionParseError(
            f"Your reply was too long ({length} characters). Reply briefly: short thoughts, "
            "then one JSON object."
        )
    fields = find_action_object(text)
    if fields is None:
        raise ActionParseError(
            'Your reply had no JSON object with an "action" key. Write your thoughts, then one '
            "JSON object in the required format."
        )
    numbers = action_kinds(view.role)
    got = _as_int(fields.get("action"))
    allowed = ", ".join(str(n) for n in sorted(numbers))
    if got is None or got[0] not in numbers:
        raise ActionParseError(f'"action" must be one of the numbers {allowed}.')
    number, action_span = got
    kind = numbers[number]
    spans = [action_span]
    thoughts_field = fields.get("thoughts")
    thoughts = str(thoughts_field.value) if thoughts_field is not None else ""

    if kind == "request_specific":
        char, span = _character(fields, view)
        prop_f = fields.get("property")
        prop = _property(prop_f.value if prop_f else None, view)
        val_f = fields.get("value")
        value = _value(prop, val_f.value if val_f else None, view)
        action = WhoDunitAction(kind=kind, character=char, property=prop, value=value)
        spans.append(span)
    elif kind == "accuse":
        char, span = _character(fields, view)
        action = WhoDunitAction(kind=kind, character=char)
        spans.append(span)
    elif kind == "respond":
        pending = view.pending_request
        if pending is None or pending.kind != "request_specific":
            raise ActionParseError(
                "There is no yes/no question to answer this round: send a broad message "
                '(action 2, "value": "property-value", "character": [ids]).'
            )
        answer = _as_bool(fields.get("value"))
        if answer is None:
            raise ActionParseError('For action 1, "value" must be true or false.')
        action = WhoDunitAction(
            kind=kind,
            answer=answer,
            character=pending.character,
            property=pending.property,
            value=pending.value,
        )
    elif kind == "respond_broad":
        val_f = fields.get("value")
        prop_f = fields.get("property")
        if prop_f is not None and isinstance(prop_f.value, str) and prop_f.value.strip():
            prop = _property(prop_f.value, view)
            raw_value = val_f.value if val_f else None
            if isinstance(raw_value, str) and canonical(raw_value).startswith(canonical(prop)):
                prop, value = _property_value(raw_value, view)
            else:
                value = _value(prop, raw_value, view)
        elif val_f is not None and isinstance(val_f.value, str):
            prop, value = _property_value(val_f.value, view)
        else:
            raise ActionParseError(
                'For action 2, "value" must be "property-value", e.g. '
                f"{next(iter(view.attributes))}-{next(iter(view.attributes.values()))[0]}."
            )
        chars_f = fields.get("character") or fields.get("characters")
        items: list[JsonField]
        if chars_f is None:
            raise ActionParseError(
                'For action 2, "character" must be the list of ids that have that value.'
            )
        items = chars_f.items if isinstance(chars_f.value, list) else [chars_f]
        ids: list[int] = []
        for item in items:
            got_id = _as_int(item)
            if got_id is None or not 1 <= got_id[0] <= view.n_suspects:
                raise ActionParseError(
                    f'"character" must list ids between 1 and {view.n_suspects} '
                    f"(got {str(item.value)[:20]!r})."
                )
            if got_id[0] not in ids:
                ids.append(got_id[0])
            spans.append(got_id[1])
        action = WhoDunitAction(
            kind=kind, property=prop, value=value, characters=tuple(sorted(ids))
        )
    elif kind == "share":
        got_fact = _as_int(fields.get("fact"))
        if got_fact is None or not 1 <= got_fact[0] <= len(view.facts):
            raise ActionParseError(
                f'"fact" must be the number of one of your facts, 1 to {len(view.facts)}.'
            )
        prop, value = view.facts[got_fact[0] - 1]
        action = WhoDunitAction(kind=kind, fact=got_fact[0], property=prop, value=value)
    else:  # skip, request_broad
        action = WhoDunitAction(kind=kind)
    return ParsedAction(action=action, thoughts=thoughts, decision_spans=spans)


def read_action(text: str, view: AgentView) -> Parsed[ParsedAction]:
    """:func:`parse_action` without raising: the parsed action, or :data:`FALLBACK_ACTION` (no
    thoughts, no decision positions) with ``fell_back=True`` and the re-prompt hint as
    ``reason`` when ``text`` is not a valid action for ``view``."""
    try:
        return Parsed(parse_action(text, view))
    except ActionParseError as err:
        fallback = ParsedAction(action=FALLBACK_ACTION, thoughts="", decision_spans=[])
        return Parsed(fallback, fell_back=True, reason=err.hint)
