// The docdex search page: one ES module, no dependencies, no build step (docs/adr/0016).
// Text from the documents only ever reaches the page as text nodes; the page view's HTML is
// rendered by the server (server/rendering/renderer.py) and passed through an allowlist here
// as well.

const $ = (id) => document.getElementById(id);
const TOKEN = "docdex-token";
const DEBOUNCE_MS = 100;
const RESULTS = 10;
const SNIPPET_CHARS = 240;
const STATUS_REFRESH_MS = 10000;
const COPIED_MS = 2000;
const LISTED_SOURCES = 8;
const VIEWS = ["signin", "search", "page", "changes", "status", "connect"];
const STATE = ["view", "q", "source", "path", "doc", "lines", "since"];
const TITLES = { search: "Search", changes: "What changed", status: "Status", connect: "Connect an agent", signin: "Sign in" };
const STOP = new Set(
  "a an and are as at be by do does for from how i in is it my of on or the this to what when where which why with".split(" "),
);
// What the page view may hold: the elements and attributes server/rendering/renderer.py and
// dialects.py write.
const TAGS = new Set(
  "A B BLOCKQUOTE BR CODE DEL DETAILS DIV EM H1 H2 H3 H4 H5 H6 HR I LI OL P PRE S SPAN STRONG SUMMARY TABLE TBODY TD TH THEAD TR UL".split(" "),
);
const ATTRIBUTES = new Set(["class", "id", "href", "title", "rel", "start", "open", "aria-label", "data-first", "data-last"]);
const SAFE_HREF = /^(https?:|mailto:|\/\?|#)/i;

class Unauthorized extends Error {}

let current = { view: "" };
let routed = "";
let signedIn = false;
let timer = 0;
let sequence = 0;
let sources = []; // /api/sources' entries, for the filter, the placeholder and the overview
let glance = { health: null, at: 0 }; // /health as the overview last read it, and when

// --- the token: in this browser's storage and request headers, never in a URL

const token = () => sessionStorage.getItem(TOKEN) || localStorage.getItem(TOKEN) || "";

function forget() {
  sessionStorage.removeItem(TOKEN);
  localStorage.removeItem(TOKEN);
}

async function api(path, params = {}, accept = []) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params)) if (value) url.searchParams.set(key, value);
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const reply = await fetch(url, { headers, cache: "no-store" });
  if (reply.status === 401) throw new Unauthorized("sign in again");
  const body = await reply.json().catch(() => ({}));
  if (!reply.ok && !accept.includes(reply.status)) throw new Error(body.error || `${reply.status} ${reply.statusText}`);
  return body;
}

async function start() {
  let listed = null;
  try {
    listed = await api("/api/sources");
  } catch (error) {
    if (error instanceof Unauthorized) return showSignIn();
  }
  signedIn = true;
  $("nav").hidden = false;
  $("search-form").hidden = false;
  $("signout").hidden = !token();
  fillSources(listed ? listed.sources : []);
  route();
}

function showSignIn() {
  forget();
  signedIn = false;
  $("nav").hidden = true;
  $("search-form").hidden = true;
  show("signin");
  $("token").focus();
}

async function signIn(event) {
  event.preventDefault();
  const value = $("token").value.trim();
  if (!value) return;
  forget();
  ($("remember").checked ? localStorage : sessionStorage).setItem(TOKEN, value);
  $("token").value = "";
  try {
    await api("/api/sources");
  } catch (error) {
    if (error instanceof Unauthorized) {
      forget();
      $("signin-error").textContent = "That is not this server's token. Try again.";
      $("token").focus();
      return;
    }
  }
  $("signin-error").textContent = "";
  start();
}

// --- views and addresses: /?q=&source=&path= (search), /?doc=&lines= (page), /?view=

function readState() {
  const params = new URLSearchParams(location.search);
  const state = Object.fromEntries(STATE.map((key) => [key, params.get(key) || ""]));
  if (!state.view) state.view = state.doc ? "page" : "search";
  return state;
}

function address(state) {
  const params = new URLSearchParams();
  for (const key of STATE) {
    const value = state[key];
    if (value && !(key === "view" && (value === "search" || value === "page"))) params.set(key, value);
  }
  const query = params.toString();
  return query ? `/?${query}` : "/";
}

function navigate(url) {
  history.pushState(null, "", url);
  route();
}

function route() {
  if (!signedIn) return;
  const state = readState();
  current = state;
  routed = location.search;
  showError("");
  if (state.view === "page") return showPage(state);
  if (state.view === "status") return showStatus();
  if (state.view === "changes") return showChanges(state);
  if (state.view === "connect") return showConnect();
  return showSearch(state);
}

function show(view) {
  for (const name of VIEWS) $(name).hidden = name !== view;
  const tab = view === "page" ? "search" : view;
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === tab) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (TITLES[view]) document.title = `${TITLES[view]} · docdex`;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function fail(error) {
  if (error instanceof Unauthorized) return showSignIn();
  showError(error.message);
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (value !== false && value != null) node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.flat().filter((child) => child != null && child !== ""));
  return node;
}

// Text a document controls (titles, paths, breadcrumbs) in an element of its own whose
// direction cannot spill into what follows, its bidirectional controls shown, not obeyed:
// a right-to-left override in a path must not reverse the rest of the line.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
const visible = (text) =>
  String(text ?? "").replace(BIDI_CONTROLS, (c) => `[U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}]`);
const isolated = (tag, attributes, text) => el(tag, attributes, el("bdi", {}, visible(text)));

const short = (commit) => (commit || "").slice(0, 7);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// --- times: one clock on the whole page
// Every time is the viewer's local time on a 24-hour clock ("2026-12-02 16:29"), the same
// whatever the browser's locale, with its UTC in a tooltip (adr/0016).

const pad = (n) => String(n).padStart(2, "0");
const localDay = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
const localClock = (d, seconds = false) => `${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ""}`;
const localTime = (d) => `${localDay(d)} ${localClock(d)}`;
const utcTime = (d) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
const parsed = (iso) => {
  const date = new Date(iso || "");
  return Number.isNaN(date.getTime()) ? null : date;
};

function ago(date) {
  const seconds = (Date.now() - date.getTime()) / 1000;
  if (seconds < 60) return "just now";
  const [count, unit] = seconds < 3600 ? [seconds / 60, "minute"] : seconds < 86400 ? [seconds / 3600, "hour"] : [seconds / 86400, "day"];
  return `${plural(Math.floor(count), unit)} ago`;
}

// A <time>: "2026-12-02 16:29 (5 minutes ago)", its day only, or the words only.
function stamp(iso, shape = "full") {
  const date = parsed(iso);
  if (!date) return "at an unknown time";
  const text = { full: `${localTime(date)} (${ago(date)})`, day: localDay(date), words: ago(date) }[shape];
  const title = shape === "words" ? `${localTime(date)} (${utcTime(date)})` : utcTime(date);
  return el("time", { datetime: date.toISOString(), title }, text);
}

function clockNote() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "this browser's";
  return `Times are in ${zone} time, 24-hour; hover over one for UTC.`;
}

// --- the index at a glance: the filter, the placeholder, the empty page

// The entries a search reads without a ref: each source's default branch ("docs", not
// "docs@v2").
const defaultEntries = () => sources.filter((s) => s.indexed && !s.name.includes("@"));
const pagesIn = (entries) => entries.reduce((sum, s) => sum + s.files, 0);

function fillSources(entries) {
  sources = entries;
  const select = $("source");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, "All sources"));
  for (const source of entries.filter((s) => s.indexed)) select.append(el("option", { value: source.name }, source.name));
  if (chosen) keepSourceOption(chosen);
  placeholder();
}

function keepSourceOption(name) {
  if (![...$("source").options].some((o) => o.value === name)) $("source").append(el("option", { value: name }, name));
  $("source").value = name;
}

function placeholder() {
  const chosen = sources.filter((s) => s.name === $("source").value);
  const entries = chosen.length ? chosen : defaultEntries();
  const where = entries.length === 1 ? entries[0].name : plural(entries.length, "source");
  $("q").placeholder = entries.length ? `Search ${plural(pagesIn(entries), "page")} in ${where}` : "Search the documentation";
}

// Read again at most every STATUS_REFRESH_MS: emptying the box often asks nothing.
async function showOverview() {
  const mine = sequence;
  if (Date.now() - glance.at > STATUS_REFRESH_MS) {
    try {
      const [listed, health] = await Promise.all([api("/api/sources"), api("/health", {}, [503])]);
      fillSources(listed.sources);
      glance = { health, at: Date.now() };
    } catch (error) {
      if (mine === sequence) fail(error);
      return;
    }
  }
  if (mine !== sequence || current.view !== "search" || current.q) return;
  $("overview").replaceChildren(...overviewWords(glance.health));
  $("overview").hidden = false;
}

function overviewWords(h) {
  const entries = defaultEntries();
  if (h.index_version == null && BEING_INDEXED.includes(h.status)) return [el("p", { class: "lead" }, `Being indexed: ${h.status_detail}`)];
  if (h.status === "error" || !entries.length) {
    return [el("p", { class: "lead" }, `Nothing is indexed yet${h.error ? `: ${h.error}` : "."}`)];
  }
  const out = [
    el(
      "p",
      { class: "lead" },
      `${plural(pagesIn(entries), "page")} in ${plural(entries.length, "source")}, index version ${h.index_version}, published `,
      stamp(h.index_created_at, "words"),
      ".",
    ),
  ];
  if (h.status !== "ok") out.push(el("p", { class: "weak" }, `${h.status}: ${h.status_detail} `, el("a", { href: "/?view=status" }, "Status")));
  const listed = entries.slice(0, LISTED_SOURCES).map((s) =>
    el("li", {}, el("bdi", { class: "name" }, visible(s.name)), ` · ${plural(s.files, "page")}`, s.description ? isolated("span", { class: "description" }, ` · ${s.description}`) : null),
  );
  if (entries.length > LISTED_SOURCES) listed.push(el("li", {}, `and ${entries.length - LISTED_SOURCES} more: `, el("a", { href: "/?view=status" }, "Status")));
  out.push(el("ul", { class: "source-list" }, listed));
  return out;
}

// --- search

function showSearch(state) {
  show("search");
  if (state.source) keepSourceOption(state.source);
  else $("source").value = "";
  placeholder();
  if ($("q").value.trim() !== state.q) $("q").value = state.q; // keeps a space just typed
  $("path").value = state.path;
  if (!state.q) $("q").focus();
  search();
}

// Typing in the header's box from another view goes back to the search, with its filters.
function schedule() {
  clearTimeout(timer);
  if (current.view !== "search") {
    history.pushState(null, "", address({ view: "search", q: $("q").value.trim(), source: current.source, path: current.path }));
    return route();
  }
  timer = setTimeout(search, DEBOUNCE_MS);
}

async function search() {
  clearTimeout(timer);
  const state = { view: "search", q: $("q").value.trim(), source: $("source").value, path: $("path").value.trim() };
  history.replaceState(null, "", address(state));
  current = state;
  routed = location.search;
  const mine = ++sequence;
  const list = $("results");
  $("overview").hidden = Boolean(state.q);
  if (!state.q) {
    list.replaceChildren();
    list.dataset.query = "";
    $("summary").textContent = "";
    return showOverview();
  }
  list.setAttribute("aria-busy", "true");
  try {
    const result = await api("/api/search", { q: state.q, source: state.source, path_prefix: state.path, n: RESULTS });
    if (mine === sequence) renderHits(result, state);
  } catch (error) {
    if (mine === sequence) fail(error);
  } finally {
    if (mine === sequence) list.removeAttribute("aria-busy");
  }
}

// A page's id ("source:path") is its chunk's id ("source:path#chunkN") up to the last '#'.
const pageId = (hit) => {
  const at = hit.chunk_id.lastIndexOf("#");
  return at < 0 ? hit.chunk_id : hit.chunk_id.slice(0, at);
};

function renderHits(result, state) {
  const pattern = termPattern(state.q);
  const list = $("results");
  const hits = result.results;
  list.replaceChildren(...hits.map((hit, i) => hitItem(hit, pattern, state, i > 0 && pageId(hits[i - 1]) === pageId(hit))));
  list.classList.toggle("weak", result.low_confidence);
  const summary = $("summary");
  summary.classList.toggle("weak", result.low_confidence && hits.length > 0);
  if (!hits.length) summary.textContent = "No match.";
  else if (result.low_confidence) {
    summary.textContent = `No good match: these ${hits.length} sections are the closest, but none answers it well.`;
  } else {
    summary.textContent = `${plural(hits.length, "section")} · index version ${result.index_version} · ${Math.round(result.took_ms)} ms`;
  }
  if (result.note) summary.textContent += ` · ${result.note}`;
  showError("");
  list.dataset.query = state.q;
  requestAnimationFrame(() => performance.mark("docdex-results", { detail: state.q }));
}

// A hit that follows another of the same page shows no title again: its section is its link.
function hitItem(hit, pattern, state, samePage) {
  const doc = pageId(hit);
  const lines = `${hit.start_line}-${hit.end_line}`;
  const link = address({ ...state, view: "page", doc, lines });
  const where = isolated("code", { class: "where" }, `${hit.path}:${lines}`);
  const head = samePage
    ? [isolated("a", { class: "hit-title hit-section", href: link }, sectionOf(hit))]
    : [isolated("a", { class: "hit-title hit-page", href: link }, hit.title || hit.path), hit.heading ? isolated("div", { class: "crumb" }, hit.heading) : null];
  const meta = samePage
    ? el("div", { class: "meta" }, where)
    : el("div", { class: "meta" }, where, " · ", el("bdi", {}, visible(hit.source)), hit.modified ? [" · ", stamp(hit.modified, "day")] : null);
  return el(
    "li",
    { class: samePage ? "hit same-page" : "hit", "data-doc": doc },
    ...head,
    meta,
    el("p", { class: "snippet" }, highlighted(visible(snippet(hit.text, pattern)), pattern)),
  );
}

// The breadcrumb without the page's title in front ("Errors" for "FAQ › Errors" under the
// title "FAQ"); what comes before the first heading below it is the start of the page.
function sectionOf(hit) {
  const parts = (hit.heading || "").split(" › ").filter(Boolean);
  if (parts[0] === hit.title) parts.shift();
  return parts.join(" › ") || "Start of the page";
}

// The query's words (stop words dropped, plural and -ing/-ed endings loosened), as one
// pattern that matches them at the start of a word.
function termPattern(query) {
  const words = query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter((w) => w.length > 1 && !STOP.has(w));
  const stems = [...new Set(words.map((w) => (w.length > 4 ? w.replace(/(ing|ed|es|s)$/, "") : w)))];
  if (!stems.length) return null;
  stems.sort((a, b) => b.length - a.length);
  const alternatives = stems.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${alternatives})[\\p{L}\\p{N}]*`, "giu");
}

// Docs generators' markup, which no reader sees (the page view renders it: dialects.py):
// comments, template tags, mdBook directives, component tags and heading ids; and at a
// line's start, callout markers (their titles stay). Other HTML stays in snippets, as text.
// Bounded repeats: a hit's text is untrusted, and an unclosed `<!--` must not make the
// search quadratic.
const GENERATOR_MARKUP = new RegExp(
  [
    String.raw`<!--[\s\S]{0,2000}?-->`,
    String.raw`\{\/\*[\s\S]{0,2000}?\*\/\}`,
    String.raw`\{\{[<%][^<>%]{0,500}[>%]\}\}`,
    String.raw`\{%[^%]{0,500}%\}`,
    String.raw`\{\{#[a-z_]+[^}]{0,500}\}\}`,
    String.raw`(?<![\w\x60])<[A-Z][\w.]*(?:\s[^<>]{0,500})?\/?>|<\/[A-Z][\w.]*>`,
    String.raw`\{:?\s*[#.][\w.:-][^{}\n]{0,200}\}`,
  ].join("|"),
  "g",
);
const CALLOUT_MARKER = /^(\s*(?:>\s*)*)(?::{3,}\s*[\w-]*|(?:!!!|\?{3}\+?)\s*[\w-]+|\[![A-Za-z]+\][+-]?)/;

function snippet(text, pattern) {
  const prose = text
    .split("\n")
    .filter((line) => line.trim() && !/^\s*#/.test(line))
    .map((line) => line.replace(CALLOUT_MARKER, "$1"))
    .join(" ")
    .replace(GENERATOR_MARKUP, " ")
    .replace(/\s+/g, " ")
    .trim();
  let start = 0;
  if (pattern) {
    pattern.lastIndex = 0;
    const found = pattern.exec(prose);
    pattern.lastIndex = 0; // matchAll() in highlighted() starts where this left it
    if (found) start = Math.max(0, found.index - 60);
  }
  const cut = prose.slice(start, start + SNIPPET_CHARS);
  return (start > 0 ? "…" : "") + cut + (start + SNIPPET_CHARS < prose.length ? "…" : "");
}

function highlighted(text, pattern) {
  if (!pattern) return [text];
  const out = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    out.push(text.slice(last, match.index), el("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  out.push(text.slice(last));
  return out;
}

// --- a page

async function showPage(state) {
  show("page");
  if ($("q").value.trim() !== state.q) $("q").value = state.q;
  $("back").setAttribute("href", address({ view: "search", q: state.q, source: state.source, path: state.path }));
  $("page-title").textContent = "Loading…";
  $("page-meta").replaceChildren();
  $("page-note").hidden = true;
  $("page-body").replaceChildren();
  let view;
  try {
    view = await api("/api/page", { doc_id: state.doc });
  } catch (error) {
    $("page-title").textContent = state.doc;
    return fail(error);
  }
  if (current !== state) return; // the reader went elsewhere meanwhile
  const page = view.page;
  document.title = `${visible(page.title || page.path)} · docdex`;
  $("page-title").replaceChildren(el("bdi", {}, visible(page.title || page.path)));
  $("page-meta").replaceChildren(el(
    "span",
    {},
    isolated("code", { class: "where" }, state.lines ? `${page.path}:${state.lines}` : page.path),
    " · ",
    el("bdi", {}, visible(page.source)),
    " · ",
    el("span", { class: "nowrap" }, "commit ", el("code", { title: page.commit }, short(page.commit))),
    page.modified ? [" · ", el("span", { class: "nowrap" }, "changed ", stamp(page.modified, "day"))] : null,
    " · ",
    el("span", { class: "nowrap" }, `${view.lines} lines`),
    permalink(view.permalink),
  ));
  $("page-note").textContent = view.note;
  $("page-note").hidden = !view.note;
  const body = $("page-body");
  body.replaceChildren(inert(view.html));
  for (const pre of body.querySelectorAll("pre")) withCopyButton(pre);
  const [from, to] = state.lines.split("-").map(Number);
  let first = null;
  for (const block of body.querySelectorAll(".blk")) {
    const hit = from > 0 && Number(block.dataset.last) >= from && Number(block.dataset.first) <= (to || from);
    block.classList.toggle("hit", hit);
    if (hit && !first) first = block;
  }
  body.dataset.doc = page.doc_id;
  scrollToId(location.hash.slice(1)) || (first ? first.scrollIntoView({ block: "center" }) : window.scrollTo(0, 0));
  performance.mark("docdex-page", { detail: page.doc_id });
}

// Where the source's host shows this page (filled in once sources know their web address).
function permalink(url) {
  if (!/^https?:\/\//i.test(url || "")) return [];
  return [" · ", el("a", { href: url, rel: "noopener noreferrer" }, "view at the source")];
}

// The server's HTML, parsed inside a <template> (inert: nothing in it runs or loads), with
// anything renderer.py would not write taken out.
function inert(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  for (const node of [...template.content.querySelectorAll("*")]) {
    if (!TAGS.has(node.tagName)) {
      node.replaceWith(document.createTextNode(node.textContent));
      continue;
    }
    for (const { name, value } of [...node.attributes]) {
      if (!ATTRIBUTES.has(name) || (name === "href" && !SAFE_HREF.test(value))) node.removeAttribute(name);
    }
  }
  return template.content;
}

function scrollToId(id) {
  const target = id && document.getElementById(decodeURIComponent(id));
  if (!target || !$("page-body").contains(target)) return false;
  target.scrollIntoView({ block: "start" });
  return true;
}

// --- what changed: /?view=changes&source=&since=, read from /api/changes

function showChanges(state) {
  show("changes");
  const names = defaultEntries().map((s) => s.name);
  if (state.source && !names.includes(state.source)) names.push(state.source);
  $("changes-source").replaceChildren(...names.map((name) => el("option", {}, name)));
  $("changes-source").value = state.source || names[0] || "";
  $("since").value = state.since;
  $("changes-list").replaceChildren();
  $("changes-more").hidden = true;
  $("changes-summary").textContent = state.since ? "" : "Since a tag, a branch, a commit, a date (2026-11-01) or an age (7d).";
  if (state.since) readChanges(state, { source: $("changes-source").value, since: state.since });
}

async function readChanges(state, params) {
  try {
    const a = await api("/api/changes", params);
    if (current !== state) return;
    const commits = Object.fromEntries(a.commits.map((c) => [c.id, c]));
    $("changes-list").append(...a.pages.map((p) => changeItem(p, commits, state)));
    const end = (p) => (p.commit ? `${p.asked || p.kind} (${short(p.commit)})` : "the start");
    $("changes-summary").textContent = `${plural(a.total, "page")} changed in ${a.source} from ${end(a.since)} to ${end(a.until)}. ${a.notes.join(" ")}`;
    $("changes-more").hidden = !a.next_cursor;
    $("changes-more").onclick = () => readChanges(state, { cursor: a.next_cursor });
  } catch (error) {
    fail(error);
  }
}

function changeItem(p, commits, state) {
  const path = p.kind === "deleted" ? isolated("span", {}, p.path) : isolated("a", { href: address({ view: "page", doc: p.doc_id, source: state.source }) }, p.path);
  const lines = p.lines_added == null ? "lines not counted" : `+${p.lines_added || 0} −${p.lines_removed || 0}`;
  const listed = (p.commits || []).map((id) => {
    const c = commits[id] || { id };
    return el("li", {}, el("code", {}, short(id)), " ", stamp(c.date, "day"), " ", isolated("span", {}, c.subject));
  });
  return el(
    "li",
    { class: `change ${p.kind}`, "data-path": p.path },
    el("b", {}, p.kind),
    path,
    p.old_path ? isolated("span", { class: "meta" }, ` from ${p.old_path}`) : null,
    el("div", { class: "meta" }, lines, p.sections?.length ? [" · in ", isolated("span", {}, p.sections.join("; "))] : null, p.note ? ` · ${p.note}` : null),
    el("ul", {}, listed),
  );
}

// --- status: what /health knows, in words

async function showStatus() {
  show("status");
  let health;
  try {
    health = await api("/health", {}, [503]);
  } catch (error) {
    return fail(error);
  }
  if (current.view !== "status") return;
  $("status-body").replaceChildren(...statusWords(health));
  const now = new Date();
  $("status-time").replaceChildren("as of ", el("time", { datetime: now.toISOString(), title: utcTime(now) }, localClock(now, true)));
}

// /health's statuses while a run indexes (nothing served yet, or chunks waiting for vectors)
const BEING_INDEXED = ["indexing", "starting"];

function statusWords(h) {
  const out = [];
  if (h.status === "error") out.push(el("p", { class: "error" }, `Nothing is served yet: ${h.error}`));
  else if (h.index_version == null) out.push(el("p", { class: "lead" }, `Being indexed: ${h.status_detail}`));
  else {
    out.push(
      el(
        "p",
        { class: "lead" },
        `Serving index version ${h.index_version}, published `,
        stamp(h.index_created_at),
        `: ${plural(h.total_sources, "source")}, ${plural(h.total_chunks, "section")}.`,
      ),
    );
    // a run reading pages, or chunks waiting for vectors: how far, how fast, how long still
    if (h.status === "indexing") out.push(el("p", { class: "weak" }, `Indexing: ${h.status_detail}`));
  }
  const refused = h.refused_version;
  if (refused) {
    const what = refused.version === null ? "The version CURRENT names" : `Version ${refused.version}`;
    out.push(el("p", { class: "error" }, `${what} could not be served (${refused.error}), so an older one is.`));
  }
  out.push(sourcesTable(h.sources || {}));
  out.push(el("p", {}, ...lastRun(h.last_ingestion, h.index_version)));
  const failure = h.last_ingestion_failure;
  out.push(
    failure
      ? el("p", { class: "error" }, "Last failure: ", stamp(failure.failed_at), `${failure.source ? ` in ${failure.source}` : ""}: ${failure.error}`)
      : el("p", {}, "No indexing failure recorded."),
  );
  const m = h.models || {};
  out.push(el("p", { class: "meta" }, `Model ${m.embedder} (${m.query_graph}), reranker ${m.reranker}; server up ${Math.round(h.uptime_s)} s. ${clockNote()}`));
  return out;
}

// The last run, in words; the version it left is compared with the one served, which a
// later swap or a refused version can make differ.
function lastRun(run, served) {
  if (!run) return ["No indexing run recorded yet."];
  const left = run.published ? `published version ${run.version}` : `found nothing to change, version ${run.version ?? "none"} stayed`;
  const now = run.version === served ? ", the one served" : served == null ? "" : `; version ${served} is served`;
  const which = run.sources && run.sources.length ? ` (${run.sources.slice(0, 5).join(", ")}${run.sources.length > 5 ? ", …" : ""})` : "";
  return [
    `Last indexing run${which}: finished `,
    stamp(run.completed_at),
    ` in ${run.duration_s.toFixed(1)} s, embedded ${plural(run.chunks_embedded, "section")}, ${left}${now}.`,
  ];
}

function sourcesTable(entries) {
  const names = Object.keys(entries);
  if (!names.length) return el("p", {}, "No source is indexed in this version.");
  const head = ["Source", "Indexed commit", "Indexed", "Files", "Sections", "Last error"];
  const cell = (i, attributes, ...children) => el("td", { ...attributes, "data-label": head[i] }, ...children);
  return el(
    "table",
    { class: "sources" },
    el("caption", {}, "Sources"),
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
    el(
      "tbody",
      {},
      names.map((name) => {
        const s = entries[name];
        return el(
          "tr",
          {},
          el("th", { scope: "row" }, name),
          cell(1, {}, el("code", { class: "commit", title: s.commit }, short(s.commit))),
          cell(2, {}, stamp(s.indexed_at)),
          cell(3, { class: "num" }, String(s.files)),
          cell(4, { class: "num" }, String(s.chunks)),
          cell(5, {}, s.last_error || "none"),
        );
      }),
    ),
  );
}

// --- connect an agent: the configurations of server/clients.py

async function showConnect() {
  show("connect");
  let c;
  try {
    c = await api("/api/clients");
  } catch (error) {
    return fail(error);
  }
  const parts = [
    el("p", {}, "MCP endpoint (streamable HTTP): ", el("code", {}, c.mcp_url)),
    c.token_required ? el("p", {}, "Clients send the token as 'Authorization: Bearer <DOCDEX_TOKEN>'; each file below names it as a variable its client expands.") : null,
    el("p", {}, ...stdioWords(c.launch), " The same as plain text: ", el("a", { href: "/clients.txt" }, "/clients.txt"), "."),
  ];
  if (c.url_only) parts.push(el("h2", {}, c.url_only.title), el("p", {}, c.url_only.words), codeBlock(c.url_only.url));
  for (const config of c.configs) {
    parts.push(el("h2", {}, `${config.client}: ${config.file} (${config.transport})`), codeBlock(config.text));
  }
  parts.push(el("h2", {}, "Claude Code, from a shell"), codeBlock(c.commands.join("\n")));
  $("connect-body").replaceChildren(...parts.filter(Boolean));
}

function stdioWords(launch) {
  if (launch.example) return ["Stdio entries start docdex on the client's machine: put in your paths."];
  return [
    "Stdio entries start docdex on the client's machine; these name this server's own command (",
    el("code", {}, launch.executable),
    ") and data directory (",
    el("code", {}, launch.data_dir),
    "): on another machine put in yours.",
  ];
}

// --- code blocks: a copy button each

const codeBlock = (text) => withCopyButton(el("pre", {}, el("code", {}, text)));

function withCopyButton(pre) {
  const box = el("div", { class: "code" });
  pre.replaceWith(box); // a block not on the page yet has no parent: nothing happens
  const button = el("button", { type: "button", class: "copy" }, "Copy");
  button.addEventListener("click", () => copy(pre, button));
  box.append(button, pre);
  return box;
}

async function copy(pre, button) {
  const copied = await toClipboard(pre);
  button.textContent = copied ? "Copied" : "Press Ctrl+C";
  button.classList.toggle("copied", copied);
  $("announce").textContent = copied ? "Copied to the clipboard." : "The text is selected: press Ctrl+C to copy it.";
  clearTimeout(button.reset);
  button.reset = setTimeout(() => {
    button.textContent = "Copy";
    button.classList.remove("copied");
  }, COPIED_MS);
}

// The Clipboard API exists only in a secure context (https, or this machine's address): on a
// LAN address over http the text is selected and copied the old way, or left selected.
async function toClipboard(pre) {
  try {
    await navigator.clipboard.writeText(pre.textContent);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(pre);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch {
      copied = false;
    }
    if (copied) selection.removeAllRanges();
    return copied;
  }
}

// --- wiring

function onClick(event) {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || url.pathname !== "/") return;
  event.preventDefault();
  if (url.search === location.search && url.hash && current.view === "page") {
    history.replaceState(null, "", url);
    scrollToId(url.hash.slice(1));
    return;
  }
  navigate(url.pathname + url.search + url.hash);
}

function onKey(event) {
  const typing = event.target.closest && event.target.closest("input, select, textarea");
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey && signedIn) {
    event.preventDefault();
    $("q").focus(); // the box is in the header, on every view: typing there goes to the search
    $("q").select();
    return;
  }
  if (current.view !== "search" || (event.key !== "ArrowDown" && event.key !== "ArrowUp") || event.target.tagName === "SELECT") return;
  const links = [...document.querySelectorAll("#results .hit-title")];
  if (!links.length) return;
  event.preventDefault();
  const at = links.indexOf(document.activeElement);
  const next = event.key === "ArrowDown" ? Math.min(at + 1, links.length - 1) : at - 1;
  if (next < 0) $("q").focus();
  else links[next].focus();
}

$("signin-form").addEventListener("submit", signIn);
$("signout").addEventListener("click", () => {
  forget();
  start();
});
$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (current.view === "search") search();
  else schedule();
});
$("filters").addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
$("q").addEventListener("input", schedule);
$("path").addEventListener("input", schedule);
$("source").addEventListener("change", () => {
  placeholder();
  search();
});
$("status-refresh").addEventListener("click", showStatus);
$("changes-form").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate(address({ view: "changes", source: $("changes-source").value, since: $("since").value.trim() }));
});
document.addEventListener("click", onClick);
document.addEventListener("keydown", onKey);
window.addEventListener("popstate", () => {
  if (location.search === routed && current.view === "page") scrollToId(location.hash.slice(1));
  else route();
});
setInterval(() => current.view === "status" && !document.hidden && showStatus(), STATUS_REFRESH_MS);
start();
