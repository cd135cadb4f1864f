"""Template tags: GitBook, Jekyll and Jinja `{% ... %}` (Liquid), Hugo shortcodes
`{{< ... >}}` and `{{% ... %}}`, a line holding one read as a `TemplateTag`, and Hugo's
escaped shortcodes (`{{</* name */>}}`) shown as its pages show them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fences import in_fences

# Bounded by the next delimiter character, so unclosed tags cannot make these quadratic.
TEMPLATE_TAG = re.compile(r"\{%[^%]*%\}|\{\{<[^>]*>\}\}|\{\{%[^%]*%\}\}")
# Hugo's escaped shortcodes, which its pages show as written: `{{</* name */>}}`.
_ESCAPED_SHORTCODE = re.compile(r"\{\{([<%])/\*[ \t]*(.*?)[ \t]*\*/([>%])\}\}")
# A line holding one tag: its frame here, its inside read by `template_tag`.
_SHORTCODE_LINE = re.compile(r"^[ \t]*+\{\{[<%](.*)[>%]\}\}[ \t]*+$")
_LIQUID_LINE = re.compile(r"^[ \t]*+\{%(.*)%\}[ \t]*+$")
_TAG_NAME = re.compile(r"[\w./-]++")
_SHORTCODE_ARGUMENT = re.compile(r"""(?:([\w-]+)=)?(?:"([^"]*)"|'([^']*)'|`([^`]*)`|([^\s"'`]+))""")


def strip_template_tags(text: str) -> str:
    """GitBook/Jinja `{% ... %}` and Hugo `{{< ... >}}` / `{{% ... %}}` tags removed (their
    newlines kept)."""
    if "{" not in text:
        return text
    return TEMPLATE_TAG.sub(lambda m: "\n" * m.group().count("\n"), text)


def without_multiline_tags(lines: list[str]) -> list[str]:
    """The lines with the template tags that span several of them blanked (outside fenced
    code; their newlines kept), such as a Hugo `{{< figure` whose arguments take a line each."""
    out = list(lines)
    code = in_fences(lines)
    start = 0
    while start < len(lines):
        if code[start] or "{" not in lines[start]:
            start += 1
            continue
        end = start
        while end + 1 < len(lines) and not code[end + 1] and lines[end + 1].strip():
            end += 1  # a tag spans lines of one paragraph at most
        text = "\n".join(out[start : end + 1])
        blanked = TEMPLATE_TAG.sub(lambda m: _newlines_of(m.group()), text)
        out[start : end + 1] = blanked.split("\n")
        start = end + 1
    return out


def _newlines_of(tag: str) -> str:
    return "\n" * tag.count("\n") if "\n" in tag else tag


def unescape_shortcodes(code: str) -> str:
    """Code as Hugo shows it: `{{</* name */>}}` is how its pages write `{{< name >}}`."""
    if "/*" not in code:
        return code
    return _ESCAPED_SHORTCODE.sub(r"{{\1 \2 \3}}", code)


@dataclass(frozen=True)
class TemplateTag:
    """A line holding one template tag: a Hugo shortcode or a GitBook/Jinja tag."""

    name: str  # lowercase
    closing: bool  # `{{< /name >}}`, `{% endname %}`
    self_closing: bool  # `{{< name />}}`
    arguments: list[tuple[str, str]]  # (key or "", value), in order

    def argument(self, *keys: str) -> str:
        """The first argument named one of `keys` ("" = the first unnamed one)."""
        return next((value for key, value in self.arguments if key in keys), "")


def template_tag(line: str) -> TemplateTag | None:
    """The tag a line holds alone, or None."""
    if "{" not in line[:80]:
        return None
    shortcode = _SHORTCODE_LINE.match(line)
    liquid = None if shortcode else _LIQUID_LINE.match(line)
    frame = shortcode or liquid
    if frame is None:
        return None
    inside = frame.group(1).strip(" \t-")  # `{{- x -}}`, `{%- x -%}` trim whitespace
    if "}}" in inside or "%}" in inside:
        return None  # more than one tag
    closing = inside.startswith("/")
    self_closing = bool(shortcode) and inside.endswith("/")
    inside = inside.strip(" \t/")
    name = _TAG_NAME.match(inside)
    if name is None:
        return None
    if liquid and name.group().startswith("end") and len(name.group()) > 3:
        closing, name_text = True, name.group()[3:]
    else:
        name_text = name.group()
    arguments = _arguments(inside[name.end() :])
    return TemplateTag(name_text.lower(), closing, self_closing, arguments)


def _arguments(text: str) -> list[tuple[str, str]]:
    return [
        (key, next((value for value in values if value), ""))
        for key, *values in _SHORTCODE_ARGUMENT.findall(text)
        if any(values)
    ]
