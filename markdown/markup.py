"""What docs generators add to markdown, recognised once for both sides (adr/0018): the
chunker leaves it out of the text it indexes (indexer/chunking/cleanup.py, mdx.py) and the
page view renders it as what it stands for (server/answers/render.py, dialects.py).

The patterns are written so that no line makes them backtrack (possessive quantifiers,
anchored searches): a page is untrusted input.

- MDX (`.mdx`, or a `.md` page that uses MDX's own syntax: `is_mdx`): ESM lines, JSX tags
  and `{expressions}`, blanked by `without_jsx`. In other pages `without_components` blanks
  only component tags (`<Pitfall>`, `<svg-image>`) and HTML comments.
- Heading ids: `{#id}`, `{: #id .class}` (attr_list, VitePress, Hugo), `{/*id*/}` (MDX).
- Callouts: MkDocs `!!! note "Title"` / `??? note`, Docusaurus and VitePress `:::tip Title`
  ... `:::`, GitHub and DocFX `> [!NOTE]`, GitBook `{% hint style="info" %}`.
- Template tags: GitBook/Jinja `{% ... %}`, Hugo shortcodes `{{< ... >}}` / `{{% ... %}}`.
- One-line directives: mkdocstrings `::: package.module`, DocFX `:::image ... :::`, mdBook
  `{{#include path}}`, MkDocs snippets `--8<-- "path"`.

Functions that rewrite a page's lines keep their count (a removed tag leaves its newlines,
one space between words and nothing at a line's start), so positions still match the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- fenced code ---------------------------------------------------------------------------

# Any indentation: fences sit inside list items and admonition bodies too.
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}(?=[^`]*$)|~{3,})")


def fence_opening(line: str) -> str:
    """The run of backticks or tildes a line opens a fence with ("" if it opens none)."""
    if line.lstrip(" \t")[:1] not in ("`", "~"):
        return ""
    opening = _FENCE_OPEN.match(line)
    return opening.group(1) if opening else ""


def closes_fence(line: str, fence: str) -> bool:
    marks = line.strip()
    return len(marks) >= len(fence) and marks == fence[0] * len(marks)


def in_fences(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to fenced code (the fence lines included)."""
    inside: list[bool] = []
    fence = ""
    for line in lines:
        if fence:
            inside.append(True)
            fence = "" if closes_fence(line, fence) else fence
        else:
            fence = fence_opening(line)
            inside.append(bool(fence))
    return inside


# --- MDX and components --------------------------------------------------------------------

_ESM_START = re.compile(r"^(?:import|export)(?=[\s{*])")
# What only MDX writes: an import from a module (Go's `import "fmt"` is none), an export, a
# {/* comment */}, a JSX attribute holding an expression. A `<Capitalised>` tag alone proves
# nothing (mdBook's <Listing>, VitePress's Vue components), and neither does an import
# inside a <script> element.
_MDX_ESM = re.compile(
    r"^(?:import\s+[\w*{}\s,]+\s+from\s+[\"']|export\s+(?:const|let|var|function|default|\{))"
)
_MDX_ONLY = re.compile(r"(?<!\{)\{/\*|<[A-Za-z][\w.]*\s[^<>]*=\{")
_SCRIPT_OPEN = re.compile(r"^\s*<script\b", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`+)[^`].*?\1|``")
_MAX_ESM_LINES = 200  # an unbalanced statement blanks at most this many lines


def is_mdx(path: str, lines: list[str]) -> bool:
    """Whether a page is MDX: its extension says so, or, outside code and <script>, it uses
    syntax only MDX has."""
    if path.lower().endswith(".mdx"):
        return True
    script = False
    for line, code in zip(lines, in_fences(lines), strict=True):
        if code or not line:
            continue
        if script:
            script = not _SCRIPT_CLOSE.search(line)
            continue
        if _SCRIPT_OPEN.match(line):
            script = not _SCRIPT_CLOSE.search(line)
            continue
        if ("{" in line or "import" in line or "export" in line) and (
            _MDX_ESM.match(line) or _MDX_ONLY.search(_CODE_SPAN.sub("", line))
        ):
            return True
    return False


def without_jsx(lines: list[str]) -> list[str]:
    """An MDX page's lines with ESM, JSX tags, `{expressions}` and HTML comments blanked,
    outside fenced code and code spans. A component's children are kept."""
    out = list(lines)
    prose: list[int] = []
    code = in_fences(lines)
    index = 0
    while index < len(lines):
        if code[index]:
            index += 1
        elif _ESM_START.match(lines[index]):
            index = _blank_esm(lines, out, index, code)
        else:
            prose.append(index)
            index += 1
    _blank_runs(out, prose, _Scanner(mdx=True))
    return out


def without_components(lines: list[str]) -> list[str]:
    """A markdown page's lines with component tags (`<Badge />`, `<svg-image>`, `</Note>`:
    capitalised, dotted or hyphenated names) and HTML comments blanked, outside fenced code
    and code spans; their children and any other HTML are kept."""
    out = list(lines)
    code = in_fences(lines)
    _blank_runs(out, [i for i, inside in enumerate(code) if not inside], _Scanner(mdx=False))
    return out


def _blank_esm(lines: list[str], out: list[str], start: int, code: list[bool]) -> int:
    """Blank the statement starting at `start`; the index of the line after it."""
    depth = 0
    index = start
    while index < len(lines) and index - start < _MAX_ESM_LINES and not code[index]:
        line = lines[index]
        depth += sum(line.count(c) for c in "{([") - sum(line.count(c) for c in "})]")
        out[index] = " " * len(line)
        index += 1
        if depth <= 0 and not line.rstrip().endswith((",", "=", "=>", "(", "{", "[")):
            break
    return index


def _blank_runs(out: list[str], prose: list[int], scanner: _Scanner) -> None:
    """Blank what the scanner finds on the prose lines; consecutive prose lines are scanned
    as one text, so a tag or a comment may span them."""
    runs: list[list[int]] = []
    for index in prose:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    for run in runs:
        text = "\n".join(out[i] for i in run)
        if "<" not in text and "{" not in text:
            continue
        cleaned = _without(text, scanner.spans(text)).split("\n")
        for i, line in zip(run, cleaned, strict=True):
            out[i] = line


@dataclass(frozen=True)
class _Scanner:
    """Finds the spans to blank: in MDX every tag and expression, elsewhere component tags;
    HTML comments in both. Linear in the text: what was once found unclosed is not looked
    for again past the same point."""

    mdx: bool

    def spans(self, text: str) -> list[tuple[int, int]]:
        removed: list[tuple[int, int]] = []
        seen = _Unclosed()
        special = _MDX_SPECIAL if self.mdx else _MARKDOWN_SPECIAL
        i = 0
        while found := special.search(text, i):
            i, c = found.start(), found.group()
            if c == "`":
                i = _skip_code_span(text, i, seen)
            elif c == "\\":
                i += 2
            elif c == "{":
                end = _brace_end(text, i)
                removed.append((i, end))
                i = end
            elif end := _comment_end(text, i, seen) or self._tag_end(text, i, seen):
                removed.append((i, end))
                i = end
            else:
                i += 1
        return removed

    def _tag_end(self, text: str, i: int, seen: _Unclosed) -> int:
        """Where the tag starting at i ends (0: no tag starts there)."""
        if self.mdx:
            return _tag_end(text, i) if _starts_jsx_tag(text, i) else 0
        if i < seen.tags_before or not _COMPONENT_TAG.match(text, i):
            return 0
        end = _tag_end(text, i)
        if text[end - 1 : end] == ">":
            return end
        seen.tags_before = end  # a component's tag left open: nothing closes before `end`
        return 0


@dataclass
class _Unclosed:
    """What a scan found left open, so that it never looks for its end again."""

    comments: bool = False  # an HTML comment runs to the end
    code_runs: set[int] = field(default_factory=set)  # backtick runs no run of closes
    tags_before: int = -1  # no component tag closes before this index


_MDX_SPECIAL = re.compile(r"[`\\<{]")
_MARKDOWN_SPECIAL = re.compile(r"[`\\<]")
_COMPONENT_TAG = re.compile(r"</?(?:[A-Z][\w]*|[a-z][\w]*(?:[.-][\w]+)+)(?=[\s/>])")


def _comment_end(text: str, i: int, seen: _Unclosed) -> int:
    """Where the HTML comment starting at i ends (0: none starts, or it never ends)."""
    if seen.comments or not text.startswith("<!--", i):
        return 0
    end = text.find("-->", i + 4)
    seen.comments = end < 0
    return 0 if end < 0 else end + 3


def _starts_jsx_tag(text: str, i: int) -> bool:
    after = text[i + 1 : i + 3]
    if after[:1] == ">" or after == "/>":  # fragments
        return True
    if after[:1] == "/":
        after = after[1:]
    return bool(after[:1]) and after[0].isalpha()


def _tag_end(text: str, i: int) -> int:
    """Index after the `>` closing the tag at i (quotes and braces skipped)."""
    j = i + 1
    quote = ""
    while j < len(text):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            j = _brace_end(text, j)
            continue
        elif c == ">":
            return j + 1
        elif c == "\n" and text[j + 1 : j + 2] == "\n":
            return j  # a blank line ends an unclosed tag: it was prose after all
        j += 1
    return j


def _brace_end(text: str, i: int) -> int:
    depth = 0
    quote = ""
    for j in range(i, len(text)):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\":
                continue
        elif c in "\"'`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "\n" and text[j + 1 : j + 2] == "\n" and depth > 0:
            return j  # unbalanced: stop at the paragraph's end
    return len(text)


def _skip_code_span(text: str, i: int, seen: _Unclosed) -> int:
    run = 1
    while text[i + run : i + run + 1] == "`":
        run += 1
    close = -1 if run in seen.code_runs else text.find("`" * run, i + run)
    if close < 0:
        seen.code_runs.add(run)
        return i + run
    return close + run


def _without(text: str, removed: list[tuple[int, int]]) -> str:
    """`text` without the ranges: each becomes its newlines, or one space between words."""
    parts: list[str] = []
    position = 0
    last = "\n"  # the last character written
    for start, end in removed:
        kept = text[position:start]
        if kept:
            parts.append(kept)
            last = kept[-1]
        newlines = text.count("\n", start, end)
        if newlines:
            parts.append("\n" * newlines)
            last = "\n"
        elif not last.isspace():
            parts.append(" ")
            last = " "
        position = end
    parts.append(text[position:])
    return "".join(parts)


# --- heading ids ---------------------------------------------------------------------------

HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_ATX_MARKS = re.compile(r"^ {0,3}#{1,6}[ \t]+")
# `{#id}`, `{#id .class key=value}`, `{: #id }`, `{.class}` at the end of a heading; MDX's
# `{/*id*/}` (react.dev) too.
_HEADING_ATTRIBUTES = re.compile(
    r"\{[ \t]*+:?[ \t]*+[#.][^{}]*+\}[ \t]*+$|\{/\*[^{}]*+\*/\}[ \t]*+$"
)
_ATTRIBUTE_ID = re.compile(r"#([\w\-:.]+)|^\{/\*\s*([\w\-:.]+)\s*\*/\}$")
# A line of its own holding only an attribute list (kramdown and attr_list block IALs).
_ATTRIBUTE_LINE = re.compile(r"^[ \t]*\{:?[ \t]*[#.][^{}]*\}[ \t]*$")


def split_heading_id(text: str) -> tuple[str, str]:
    """A heading's text without a trailing attribute list, and the id it gives ("" if none)."""
    if not text.rstrip().endswith("}"):
        return text, ""
    attributes = _HEADING_ATTRIBUTES.match(text, text.rfind("{"))  # the last `{` opens it
    if not attributes:
        return text, ""
    found = _ATTRIBUTE_ID.search(attributes.group().strip())
    given = next((group for group in found.groups() if group), "") if found else ""
    return text[: attributes.start()].rstrip(" \t"), given


def heading_line_without_markup(line: str) -> tuple[str, str]:
    """An ATX heading line without its trailing attribute list, and without the `::: ` of a
    mkdocstrings heading (`#### ::: module.Name`); and the id the attributes give."""
    line, given = split_heading_id(line)
    marks = _ATX_MARKS.match(line)
    if marks and (target := autodoc_target(line[marks.end() :])):
        line = marks.group() + target
    return line, given


def is_attribute_line(line: str) -> bool:
    return line.rstrip().endswith("}") and bool(_ATTRIBUTE_LINE.match(line))


# --- callouts ------------------------------------------------------------------------------

CALLOUT_KINDS = ("note", "tip", "important", "warning", "danger")
# The names generators give their callouts, each shown as one of CALLOUT_KINDS.
_KIND_OF = {
    name: kind
    for kind, names in {
        "note": "note info abstract summary tldr seealso example quote cite remark details"
        " question help faq todo",
        "tip": "tip hint success check done",
        "important": "important",
        "warning": "warning caution attention alert",
        "danger": "danger error failure fail missing bug",
    }.items()
    for name in names.split()
}


@dataclass(frozen=True)
class Callout:
    kind: str  # one of CALLOUT_KINDS: how it looks
    name: str  # as written: "note", "NOTE", "details"
    title: str | None = None  # as written; None when none is ("" = explicitly none)
    folds: bool = False  # collapsible (MkDocs `???`, VitePress `::: details`)
    open: bool = False  # collapsible and open at first (`???+`)

    @property
    def label(self) -> str:
        """The title a reader sees: the written one, else the name capitalised."""
        return self.name.capitalize() if self.title is None else self.title


def callout(
    name: str, title: str | None = None, folds: bool = False, open: bool = False
) -> Callout | None:
    """The callout a generator's name stands for, or None if the name is no callout's."""
    kind = _KIND_OF.get(name.lower())
    if kind is None:
        return None
    folds = folds or name.lower() == "details"
    return Callout(kind, name, None if title is None else title.strip(), folds, open)


# MkDocs (admonition, pymdownx.details): `!!! type "title"`, `??? type`, `???+ type`, with
# options such as `inline end` after the type.
_MKDOCS = re.compile(r'^[ \t]*+(!!!|\?\?\?\+?)[ \t]++([\w-]++)([^"]*+)(?:"([^"]*+)")?[ \t]*+$')
_MKDOCS_OPTIONS = re.compile(r"[\w \t-]*+")
# Docusaurus and VitePress containers: `:::tip`, `::: tip Title`, `:::note[Title]`, and the
# lone `:::` that closes them; mkdocstrings' `::: package.module` is no container.
_COLON_FENCE = re.compile(r"^[ \t]*(:{3,})[ \t]*([A-Za-z][\w-]*)?(?:[ \t]*\[([^\]]*)\])?(.*)$")
_AUTODOC = re.compile(r"^[ \t]*:::[ \t]+([A-Za-z_][\w-]*(?:\.[\w-]+)+)[ \t]*$")
# DocFX's one-line directives: `:::image type="content" source="a.png" alt-text="A":::`.
_DOCFX = re.compile(r"^[ \t]*:::([a-z][\w-]*)\b(.*?):::[ \t]*$")
_DOCFX_ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')
# GitHub, DocFX, Obsidian and Hugo alerts: `[!NOTE]`, `[!TIP]+ Title` opening a blockquote.
_ALERT = re.compile(r"^[ \t]*\[!([A-Za-z]+)\]([+-]?)[ \t]*(.*)$")
_GITBOOK_HINT = re.compile(
    r"""^[ \t]*\{%-?[ \t]*hint[ \t]+style=["']?(\w+)["']?[ \t]*-?%\}[ \t]*$"""
)
_GITBOOK_END = re.compile(r"^[ \t]*\{%-?[ \t]*endhint[ \t]*-?%\}[ \t]*$")


def mkdocs_admonition(line: str) -> Callout | None:
    """The callout a MkDocs admonition line opens (its body: the lines indented below it)."""
    if line.lstrip(" \t")[:1] not in ("!", "?"):
        return None
    match = _MKDOCS.match(line)
    if not match:
        return None
    marker, name, options, title = match.groups()
    if not _MKDOCS_OPTIONS.fullmatch(options):
        return None
    folds, open = marker.startswith("?"), marker == "???+"
    return callout(name, title, folds, open) or Callout("note", name, title, folds, open)


@dataclass(frozen=True)
class ColonFence:
    markers: int  # how many colons: a container closes at a lone run at least as long
    name: str  # "" for a closing line
    title: str | None  # None when none is written


def colon_fence(line: str) -> ColonFence | None:
    """A Docusaurus/VitePress container line (`:::tip Title`, `:::`), not a directive."""
    if line.lstrip(" \t")[:3] != ":::" or _AUTODOC.match(line) or _DOCFX.match(line):
        return None
    match = _COLON_FENCE.match(line)
    if not match:
        return None
    colons, name, bracketed, rest = match.groups()
    title = bracketed if bracketed is not None else (rest.strip() or None)
    if not name and title is not None:
        return None  # `::: ` followed by something that names nothing
    return ColonFence(len(colons), name or "", title)


def autodoc_target(line: str) -> str:
    """The object a mkdocstrings `::: package.module.Name` line documents ("" if none)."""
    match = _AUTODOC.match(line) if line.lstrip(" \t")[:3] == ":::" else None
    return match.group(1) if match else ""


def docfx_directive(line: str) -> tuple[str, dict[str, str]] | None:
    """(name, attributes) of a DocFX one-line directive (`:::image ... :::`)."""
    match = _DOCFX.match(line) if line.lstrip(" \t")[:3] == ":::" else None
    if not match:
        return None
    return match.group(1), dict(_DOCFX_ATTRIBUTE.findall(match.group(2)))


def alert(first_line: str) -> Callout | None:
    """The callout a blockquote's first line opens with `[!TYPE]`; the rest of the line is
    its title (Obsidian and Hugo write one; GitHub and DocFX none)."""
    if "[!" not in first_line[:40]:
        return None
    match = _ALERT.match(first_line)
    if not match:
        return None
    name, fold, rest = match.groups()
    return callout(name, rest or None, folds=bool(fold), open=fold == "+")


def gitbook_hint(line: str) -> Callout | None:
    """The callout a GitBook `{% hint style="..." %}` line opens."""
    match = _GITBOOK_HINT.match(line) if "hint" in line else None
    if not match:
        return None
    return callout(match.group(1), "") or Callout("note", match.group(1), "")


def closes_gitbook_hint(line: str) -> bool:
    return "endhint" in line and bool(_GITBOOK_END.match(line))


# MDX pages write callouts as components, alone on their lines: Docusaurus `<Admonition
# type="tip" title="Title">`, Starlight `<Aside type="caution">`, Mintlify `<Note>` and
# `<Warning>`, react.dev `<Pitfall>` and `<DeepDive>`.
_COMPONENT_LINE = re.compile(r"^[ \t]*<([A-Z]\w*)((?:\s[^<>]*)?)>[ \t]*$")
_COMPONENT_ATTRIBUTE = re.compile(r"""\b(type|title)=["']([^"']*)["']""")
_TYPED_COMPONENTS = ("Admonition", "Aside", "Callout")


def component_callout(line: str) -> Callout | None:
    """The callout a line holding only a component's opening tag stands for, if any (it
    ends at the line holding only `</Name>`)."""
    match = _COMPONENT_LINE.match(line) if line.lstrip(" \t")[:1] == "<" else None
    if not match:
        return None
    name, attributes = match.groups()
    given = dict(_COMPONENT_ATTRIBUTE.findall(attributes))
    title = given.get("title")
    if name in _TYPED_COMPONENTS:
        kind = given.get("type", "note")
        return callout(kind, title) or Callout("note", kind, title)
    if name == "Pitfall":
        return Callout("warning", name, title)
    if name == "DeepDive":
        return Callout("note", "Deep dive", title, folds=True)
    return callout(name, title)


def component_name(line: str) -> str:
    """The name of the component whose opening tag a line holds alone ("" if none)."""
    match = _COMPONENT_LINE.match(line) if line.lstrip(" \t")[:1] == "<" else None
    return match.group(1) if match else ""


# --- template tags and directives ----------------------------------------------------------

# Bounded by the next delimiter character, so unclosed tags cannot make these quadratic.
TEMPLATE_TAG = re.compile(r"\{%[^%]*%\}|\{\{<[^>]*>\}\}|\{\{%[^%]*%\}\}")
# Hugo's escaped shortcodes, which its pages show as written: `{{</* name */>}}`.
_ESCAPED_SHORTCODE = re.compile(r"\{\{([<%])/\*[ \t]*(.*?)[ \t]*\*/([>%])\}\}")
# A line holding one tag: its frame here, its inside read by `template_tag`.
_SHORTCODE_LINE = re.compile(r"^[ \t]*+\{\{[<%](.*)[>%]\}\}[ \t]*+$")
_LIQUID_LINE = re.compile(r"^[ \t]*+\{%(.*)%\}[ \t]*+$")
_TAG_NAME = re.compile(r"[\w./-]++")
_SHORTCODE_ARGUMENT = re.compile(r"""(?:([\w-]+)=)?(?:"([^"]*)"|'([^']*)'|`([^`]*)`|([^\s"'`]+))""")
_MDBOOK = re.compile(r"^[ \t]*+\{\{#([a-z_]++)[ \t]++([^}]*+)\}\}[ \t]*+$")
_SNIPPET = re.compile(r"""^[ \t]*--8<--[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|(\S+))[ \t]*$""")


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


def mdbook_directive(line: str) -> tuple[str, str] | None:
    """(name, argument) of an mdBook `{{#include path}}` line (also `rustdoc_include`,
    `playground`, `title`)."""
    match = _MDBOOK.match(line) if "{{#" in line else None
    return (match.group(1), match.group(2).rstrip(" \t")) if match else None


def snippet_path(line: str) -> str:
    """The file a MkDocs `--8<-- "path"` line includes ("" if the line is no such line)."""
    match = _SNIPPET.match(line) if "--8<--" in line else None
    return next(group for group in match.groups() if group) if match else ""
