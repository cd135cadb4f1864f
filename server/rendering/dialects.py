"""The page view's reading of what docs generators add to markdown (the syntax itself is
recognised in the docdex.markdown package, as the chunker recognises it).

Before parsing (`view_source`), on the page's lines, their count kept: heading ids are taken
off their headings (`{#install}`, `{: #id}`, MDX's `{/*id*/}`: they become the headings'
anchors), an MDX page loses its ESM, JSX tags and `{expressions}` and any other page its
component tags (`<Badge />`, `<svg-image>`) and HTML comments, children kept; VitePress's
`<script setup>` and `<style scoped>` blocks go. Other HTML stays text, as adr/0016 has it.

While parsing (`add_rules`), markdown-it rules turn callouts into `callout_open` /
`callout_close` tokens rendered as `<div class="callout callout-KIND">` with a title (or
`<details>` when they fold): MkDocs admonitions, Docusaurus and VitePress `:::` containers,
GitHub and DocFX `> [!NOTE]` alerts, GitBook hints and Hugo's alert-like shortcodes. A line
holding only a template tag shows nothing, except that Hugo's code shortcodes become code
blocks and includes (Hugo, Jekyll, MkDocs snippets, mdBook) a note naming the file; an
mkdocstrings `::: module.Name` line names what it documents; DocFX's `:::image:::` shows its
alt text. Inline template tags are dropped from text, and code shows Hugo's escaped
shortcodes as Hugo's pages do.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.ruler import RuleOptionsType
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from docdex.markdown import (
    admonitions,
    alerts,
    attribute_lists,
    callout_components,
    callouts,
    containers,
    directives,
    fences,
    hints,
    jsx,
    template_tags,
)

T = TypeVar("T")

# The block rules may start where a paragraph, a reference, a quote or a list would go on.
_INTERRUPTS: RuleOptionsType = {"alt": ["paragraph", "reference", "blockquote", "list"]}
# Hugo shortcodes whose content is code, and the language it is in when none is given.
_CODE_SHORTCODES = {"highlight": "", "code": "", "code-toggle": "toml", "code-block": ""}
_DETAILS_SHORTCODES = ("details", "expand", "collapse")
_INCLUDE_TAGS = ("include", "include_relative", "readfile")
_VUE_BLOCK = re.compile(r"^<(script|style)\b[^>]*\b(?:setup|scoped|module)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ViewSource:
    """What the view's parser reads: the page's text as prepared here (same lines), and the
    ids written on headings, by 0-based line."""

    text: str
    heading_ids: dict[int, str]
    mdx: bool


def view_source(text: str, path: str) -> ViewSource:
    lines = text.split("\n")
    mdx = jsx.is_mdx(path, lines)
    heading_ids: dict[int, str] = {}
    for index, (line, code) in enumerate(zip(lines, fences.in_fences(lines), strict=True)):
        if not code and attribute_lists.HEADING_LINE.match(line):
            lines[index], given = attribute_lists.heading_line_without_markup(line)
            if given:
                heading_ids[index] = given
    lines = _callout_components_as_containers(template_tags.without_multiline_tags(lines))
    lines = jsx.without_jsx(lines) if mdx else _without_vue_blocks(jsx.without_components(lines))
    return ViewSource("\n".join(lines), heading_ids, mdx)


_COMPONENT_COLONS = ":" * 8  # more than any container written inside one would use


def _callout_components_as_containers(lines: list[str]) -> list[str]:
    """`<Note>` ... `</Note>` (each alone on its line) rewritten as the `:::` container it
    stands for, so that it renders as one; other components are blanked later."""
    out = list(lines)
    code = fences.in_fences(lines)
    closings: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        if not code[index] and line.lstrip()[:2] == "</":
            closings.setdefault(line.strip()[2:-1], []).append(index)
    for index, line in enumerate(lines):
        found = None if code[index] else callout_components.component_callout(line)
        if found is None:
            continue
        close = _next_after(
            closings.get(callout_components.component_name(line), []), index, len(lines)
        )
        if close == len(lines):
            continue
        container = "details" if found.folds else found.kind
        label = found.label.replace("]", "")
        title = "" if label == container.capitalize() else f"[{label}]"
        out[index], out[close] = f"{_COMPONENT_COLONS}{container}{title}", _COMPONENT_COLONS
    return out


def _without_vue_blocks(lines: list[str]) -> list[str]:
    """VitePress hoists `<script setup>` and `<style scoped>` blocks out of the page."""
    out = list(lines)
    index = 0
    while index < len(out):
        opening = _VUE_BLOCK.match(out[index])
        if not opening:
            index += 1
            continue
        closing = f"</{opening.group(1).lower()}"
        while index < len(out):
            done = closing in out[index].lower()
            out[index] = ""
            index += 1
            if done:
                break
    return out


def add_rules(md: MarkdownIt) -> None:
    """Teach `md` the generators' callouts, directives and template tags."""
    for name, rule in (
        ("colon_container", _colon_container),
        ("mkdocs_admonition", _mkdocs_admonition),
        ("gitbook_hint", _gitbook_hint),
        ("template_line", _template_line),
        ("directive_line", _directive_line),
    ):
        md.block.ruler.before("fence", name, rule, _INTERRUPTS)
    md.core.ruler.after("block", "dialect_blocks", _rewrite_blocks)
    md.core.ruler.after("text_join", "template_tags", _without_inline_tags)
    md.add_render_rule("callout_open", _render_callout_open)
    md.add_render_rule("callout_close", _render_callout_close)
    md.add_render_rule("directive", _render_directive)


# --- block rules ---------------------------------------------------------------------------


def _line(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _is_code(state: StateBlock, line: int) -> bool:
    """An indented code line where a block would start (four columns past the container)."""
    return state.sCount[line] - state.blkIndent >= 4


def _opening(
    state: StateBlock, start: int, starts: str | tuple[str, ...], recognise: Callable[[str], T]
) -> T | None:
    """What `recognise` makes of the line at `start`, where a block may begin and the line
    begins with `starts` (None otherwise)."""
    if not state.src.startswith(starts, state.bMarks[start] + state.tShift[start]):
        return None  # the common case, checked first: every paragraph line asks each rule
    return None if _is_code(state, start) else recognise(_line(state, start))


def _colon_container(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    fence = _opening(state, start, ":::", containers.colon_fence)
    if fence is None or silent:
        return fence is not None
    if not fence.name:  # a closing line with nothing open: it shows nothing
        state.line = start + 1
        return True
    close = _closing_line(state, start, end, lambda text: _closes_colons(text, fence.markers))
    found = callouts.callout(fence.name, fence.title)
    _container(state, start, close, end, found)
    return True


def _closes_colons(text: str, markers: int) -> bool:
    stripped = text.strip()
    return len(stripped) >= markers and stripped == ":" * len(stripped)


def _mkdocs_admonition(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    found = _opening(state, start, ("!!!", "???"), admonitions.mkdocs_admonition)
    if found is None or silent:
        return found is not None
    body_indent = state.sCount[start] + 4
    after = start + 1
    for line in range(start + 1, end):
        if state.isEmpty(line):
            continue
        if state.sCount[line] < body_indent:
            break
        after = line + 1
    old_indent = state.blkIndent
    state.blkIndent = body_indent
    _push_callout(state, start, after, found, body=(start + 1, after))
    state.blkIndent = old_indent
    state.line = after
    return True


def _gitbook_hint(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    found = _opening(state, start, "{%", hints.gitbook_hint)
    if found is not None and not silent:
        close = _closing_line(state, start, end, hints.closes_gitbook_hint)
        _container(state, start, close, end, found)
    return found is not None


def _template_line(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A line holding only a template tag: a code block, a callout, an include note, or
    nothing (the lines between a pair show as they are)."""
    tag = _opening(state, start, ("{{", "{%"), template_tags.template_tag)
    if tag is None or silent:
        return tag is not None
    state.line = start + 1
    if tag.name in _INCLUDE_TAGS and not tag.closing:
        _push_directive(state, start, "included", tag.argument("", "file", "path"))
        return True
    if tag.closing or tag.self_closing:
        return True
    close = _next_after(_tag_closings(state).get(tag.name, []), start, end)
    if close == end:
        return True
    if tag.name in _CODE_SHORTCODES:
        language = tag.argument("lang", "") or _CODE_SHORTCODES[tag.name]
        _push_code(state, start, close, language)
    elif found := _shortcode_callout(tag):
        _container(state, start, close, end, found)
    return True


def _tag_closings(state: StateBlock) -> dict[str, list[int]]:
    """The lines holding a closing template tag, by the tag's name, in order: read once a
    page (pairing each opening tag by scanning would take time quadratic in the tags)."""
    if "tag_closings" not in state.env:
        lines = state.src.split("\n")
        closings: dict[str, list[int]] = {}
        for index, (line, code) in enumerate(zip(lines, fences.in_fences(lines), strict=True)):
            tag = None if code else template_tags.template_tag(line)
            if tag is not None and tag.closing:
                closings.setdefault(tag.name, []).append(index)
        state.env["tag_closings"] = closings
    return state.env["tag_closings"]


def _next_after(lines: list[int], start: int, end: int) -> int:
    """The first of `lines` (sorted) after `start` and before `end`, else `end`."""
    at = bisect.bisect_right(lines, start)
    return lines[at] if at < len(lines) and lines[at] < end else end


def _shortcode_callout(tag: template_tags.TemplateTag) -> callouts.Callout | None:
    """Docsy's `{{% alert title="x" color="warning" %}}`, `{{< note >}}` and the like."""
    title = tag.argument("title", "summary") or None
    if tag.name in _DETAILS_SHORTCODES:
        return callouts.Callout("note", tag.name, title or tag.argument("") or None, folds=True)
    if tag.name in ("alert", "callout", "admonition", "notice"):
        name = tag.argument("color", "type", "") or "note"
        return callouts.callout(name, title) or callouts.Callout("note", name, title)
    return callouts.callout(tag.name, title)


def _directive_line(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """mkdocstrings `::: module.Name`, DocFX `:::image ... :::`, MkDocs snippets and mdBook
    includes written outside code."""
    shown = _opening(state, start, (":::", "--8<--", "{{#"), _directive)
    if shown is None or silent:
        return shown is not None
    state.line = start + 1
    if directives.autodoc_target(_line(state, start)):
        while state.line < end and _indented_under(state, state.line, start):
            state.line += 1  # its options
    if shown[1]:
        _push_directive(state, start, *shown)
    return True


def _indented_under(state: StateBlock, line: int, start: int) -> bool:
    return state.isEmpty(line) or state.sCount[line] > state.sCount[start]


def _directive(text: str) -> tuple[str, str] | None:
    """(what, argument) a directive line shows, or None for a line that is none."""
    if target := directives.autodoc_target(text):
        return "documents", target
    if docfx := directives.docfx_directive(text):
        name, attributes = docfx
        if name == "image":
            return "image", attributes.get("alt-text", "") or "untitled"
        return ("code from", attributes.get("source", "")) if name == "code" else ("", "")
    if path := directives.snippet_path(text):
        return "included", path
    if mdbook := directives.mdbook_directive(text):
        return ("included", mdbook[1]) if "include" in mdbook[0] else ("", "")
    return None


def _closing_line(state: StateBlock, start: int, end: int, closes: Callable[[str], bool]) -> int:
    """The first line after `start` that `closes` accepts, outside fenced code and before
    a line indented less than the container ("end" when there is none)."""
    fence = ""
    for line in range(start + 1, end):
        text = _line(state, line)
        if text and state.sCount[line] < state.blkIndent:
            return end
        if fence:
            fence = "" if fences.closes_fence(text, fence) else fence
        elif fence := fences.fence_opening(text):
            continue
        elif closes(text):
            return line
    return end


def _container(
    state: StateBlock, start: int, close: int, end: int, found: callouts.Callout | None
) -> None:
    """The lines between `start` and `close` parsed as the body of a callout (of nothing
    but themselves when `found` is None); the closing line, if any, consumed."""
    _push_callout(state, start, close + (close < end), found, body=(start + 1, close))
    state.line = close + 1 if close < end else end


def _push_callout(
    state: StateBlock, start: int, after: int, found: callouts.Callout | None, body: tuple[int, int]
) -> None:
    old_parent, old_max = state.parentType, state.lineMax
    state.parentType = "callout"
    state.lineMax = body[1]
    if found is not None:
        opening = state.push("callout_open", "div", 1)
        opening.map, opening.meta, opening.block = [start, after], {"callout": found}, True
    state.md.block.tokenize(state, *body)
    if found is not None:
        state.push("callout_close", "div", -1).meta = {"callout": found}
    state.parentType, state.lineMax = old_parent, old_max


def _push_code(state: StateBlock, start: int, close: int, language: str) -> None:
    token = state.push("fence", "code", 0)
    token.info, token.markup, token.map = language, "```", [start, close + 1]
    token.content = state.getLines(start + 1, close, state.sCount[start], True)
    state.line = close + 1


def _push_directive(state: StateBlock, line: int, what: str, argument: str) -> None:
    token = state.push("directive", "p", 0)
    token.map, token.block = [line, line + 1], True
    token.meta = {"what": what, "argument": argument}


# --- core rules ----------------------------------------------------------------------------


def _rewrite_blocks(state: StateCore) -> None:
    """A blockquote whose first line is `[!NOTE]` (`[!TIP]+ Title`...) becomes a callout;
    a fence of mdBook includes only, a note naming the file; Hugo's escaped shortcodes in
    code show as written."""
    tokens = state.tokens
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "blockquote_open":
            _alert_at(tokens, index)
        elif token.type == "fence":
            _fence_of_includes(token)
            token.content = template_tags.unescape_shortcodes(token.content)
        index += 1


def _alert_at(tokens: list[Token], index: int) -> None:
    opening = tokens[index]
    if index + 2 >= len(tokens) or tokens[index + 1].type != "paragraph_open":
        return
    inline = tokens[index + 2]
    first, _, rest = inline.content.partition("\n")
    found = alerts.alert(first)
    if found is None:
        return
    close = next(
        i
        for i in range(index + 1, len(tokens))
        if tokens[i].type == "blockquote_close" and tokens[i].level == opening.level
    )
    for token, kind in ((opening, "callout_open"), (tokens[close], "callout_close")):
        token.type, token.tag, token.meta = kind, "div", {"callout": found}
    if rest.strip():
        inline.content = rest
    else:
        del tokens[index + 1 : index + 4]  # the paragraph held the marker only


def _fence_of_includes(token: Token) -> None:
    lines = [line for line in token.content.split("\n") if line.strip()]
    found = [directives.mdbook_directive(line) for line in lines]
    if lines and all(d is not None and "include" in d[0] for d in found):
        paths = ", ".join(d[1] for d in found if d is not None)
        token.type, token.tag = "directive", "p"
        token.meta = {"what": "included", "argument": paths}


def _without_inline_tags(state: StateCore) -> None:
    """Template tags inside a paragraph (`{{< new-in 0.140.0 />}}`) show nothing."""
    for token in state.tokens:
        for child in token.children or []:
            if child.type == "text" and "{" in child.content:
                child.content = template_tags.TEMPLATE_TAG.sub("", child.content)
            elif child.type == "code_inline":
                child.content = template_tags.unescape_shortcodes(child.content)


# --- rendering -----------------------------------------------------------------------------


# markdown-it's render rules: (renderer, tokens, index, options, env) -> HTML


def _render_callout_open(self, tokens: Sequence[Token], idx: int, options, env: Any) -> str:
    found: callouts.Callout = tokens[idx].meta["callout"]
    classes = f"callout callout-{found.kind}"
    title = escapeHtml(found.label)
    if found.folds:
        opened = " open" if found.open else ""
        summary = f'<summary class="callout-title">{title}</summary>'
        return f'<details class="{classes}"{opened}>{summary}\n'
    heading = f'<p class="callout-title">{title}</p>\n' if title else ""
    return f'<div class="{classes}">\n{heading}'


def _render_callout_close(self, tokens: Sequence[Token], idx: int, options, env: Any) -> str:
    return "</details>\n" if tokens[idx].meta["callout"].folds else "</div>\n"


def _render_directive(self, tokens: Sequence[Token], idx: int, options, env: Any) -> str:
    what, argument = tokens[idx].meta["what"], escapeHtml(tokens[idx].meta["argument"])
    if what == "image":
        return f'<p><span class="image">image: {argument}</span></p>\n'
    return f'<p class="directive">{escapeHtml(what)} <code>{argument}</code></p>\n'
