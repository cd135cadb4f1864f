// The docdex search page: one ES module, no dependencies, no build step (docs/adr/0016).
// Text from the documents only ever reaches the page as text nodes; the page view's HTML is
// rendered by the server (server/render.py) and passed through an allowlist here as well.

const $ = (id) => document.getElementById(id);
const TOKEN = "docdex-token";
const DEBOUNCE_MS = 100;
const RESULTS = 10;
const SNIPPET_CHARS = 240;
const STATUS_REFRESH_MS = 10000;
const VIEWS = ["signin", "search", "page", "status", "connect"];
const STATE = ["view", "q", "source", "path", "doc", "lines"];
const TITLES = { search: "Search", status: "Status", connect: "Connect an agent", signin: "Sign in" };
const STOP = new Set(
  "a an and are as at be by do does for from how i in is it my of on or the this to what when where which why with".split(" "),
);
// What the page view may hold: the elements and attributes server/answers/render.py and
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

// --- the token: in this browser's storage and request headers, never in a URL -------------

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
  let sources = null;
  try {
    sources = await api("/api/sources");
  } catch (error) {
    if (error instanceof Unauthorized) return showSignIn();
  }
  signedIn = true;
  $("nav").hidden = false;
  $("signout").hidden = !token();
  fillSources(sources ? sources.sources : []);
  route();
}

function showSignIn() {
  forget();
  signedIn = false;
  $("nav").hidden = true;
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

// --- views and addresses: /?q=&source=&path= (search), /?doc=&lines= (page), /?view= --------

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

const day = (iso) => (iso ? iso.slice(0, 10) : "");
const short = (commit) => (commit || "").slice(0, 7);

// --- search ------------------------------------------------------------------------------

function fillSources(sources) {
  const select = $("source");
  select.replaceChildren(el("option", { value: "" }, "All sources"));
  for (const source of sources.filter((s) => s.indexed)) select.append(el("option", { value: source.name }, source.name));
}

function showSearch(state) {
  show("search");
  if (state.source && ![...$("source").options].some((o) => o.value === state.source)) {
    $("source").append(el("option", { value: state.source }, state.source));
  }
  $("q").value = state.q;
  $("source").value = state.source;
  $("path").value = state.path;
  if (!state.q) $("q").focus();
  search();
}

function schedule() {
  clearTimeout(timer);
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
  if (!state.q) {
    list.replaceChildren();
    list.dataset.query = "";
    $("summary").textContent = "";
    return;
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

function renderHits(result, state) {
  const pattern = termPattern(state.q);
  const list = $("results");
  const hits = result.results;
  list.replaceChildren(...hits.map((hit) => hitItem(hit, pattern, state)));
  list.classList.toggle("weak", result.low_confidence);
  const summary = $("summary");
  summary.classList.toggle("weak", result.low_confidence && hits.length > 0);
  if (!hits.length) summary.textContent = "No match.";
  else if (result.low_confidence) {
    summary.textContent = `No good match: these ${hits.length} sections are the closest, but none answers it well.`;
  } else {
    const plural = hits.length === 1 ? "" : "s";
    summary.textContent = `${hits.length} section${plural} · index version ${result.index_version} · ${Math.round(result.took_ms)} ms`;
  }
  showError("");
  list.dataset.query = state.q;
  requestAnimationFrame(() => performance.mark("docdex-results", { detail: state.q }));
}

function hitItem(hit, pattern, state) {
  const lines = `${hit.start_line}-${hit.end_line}`;
  const link = address({ ...state, view: "page", doc: hit.doc_id, lines });
  return el(
    "li",
    { class: "hit" },
    isolated("a", { class: "hit-title", href: link }, hit.title || hit.path),
    hit.heading ? isolated("div", { class: "crumb" }, hit.heading) : null,
    el(
      "div",
      { class: "meta" },
      isolated("code", { class: "where" }, `${hit.path}:${lines}`),
      " · ",
      el("bdi", {}, visible(hit.source)),
      " · ",
      el("code", { title: hit.commit }, short(hit.commit)),
      hit.modified ? ` · ${day(hit.modified)}` : "",
    ),
    el("p", { class: "snippet" }, highlighted(visible(snippet(hit.text, pattern)), pattern)),
  );
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

// --- a page ------------------------------------------------------------------------------

async function showPage(state) {
  show("page");
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
  $("page-meta").replaceChildren(
    isolated("code", { class: "where" }, state.lines ? `${page.path}:${state.lines}` : page.path),
    " · ",
    el("bdi", {}, visible(page.source)),
    " · commit ",
    el("code", { title: page.commit }, short(page.commit)),
    page.modified ? ` · changed ${day(page.modified)}` : "",
    ` · ${view.lines} lines`,
    ...permalink(view.permalink),
  );
  $("page-note").textContent = view.note;
  $("page-note").hidden = !view.note;
  const body = $("page-body");
  body.replaceChildren(inert(view.html));
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
// anything render.py would not write taken out.
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

// --- status: what /health knows, in words ---------------------------------------------------

function ago(iso) {
  const seconds = (Date.now() - Date.parse(iso)) / 1000;
  if (!Number.isFinite(seconds)) return "";
  const [count, unit] =
    seconds < 60 ? [0, ""] : seconds < 3600 ? [seconds / 60, "minute"] : seconds < 86400 ? [seconds / 3600, "hour"] : [seconds / 86400, "day"];
  if (!unit) return "just now";
  const n = Math.floor(count);
  return `${n} ${unit}${n === 1 ? "" : "s"} ago`;
}

const when = (iso) => (iso ? `${iso.replace("T", " ").slice(0, 16)} UTC (${ago(iso)})` : "at an unknown time");

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
  $("status-time").textContent = `as of ${new Date().toLocaleTimeString()}`;
}

function statusWords(h) {
  const out = [];
  if (h.status === "error") out.push(el("p", { class: "error" }, `Nothing is served yet: ${h.error}`));
  else {
    out.push(
      el(
        "p",
        { class: "lead" },
        `Serving index version ${h.index_version}, published ${when(h.index_created_at)}: `,
        `${h.total_sources} source${h.total_sources === 1 ? "" : "s"}, ${h.total_chunks} sections.`,
      ),
    );
  }
  const refused = h.refused_version;
  if (refused) {
    const what = refused.version === null ? "The version CURRENT names" : `Version ${refused.version}`;
    out.push(el("p", { class: "error" }, `${what} could not be served (${refused.error}), so an older one is.`));
  }
  out.push(sourcesTable(h.sources || {}));
  const run = h.last_ingestion;
  out.push(
    el(
      "p",
      {},
      run
        ? `Last indexing run: finished ${when(run.completed_at)} in ${run.duration_s.toFixed(1)} s, ` +
            `embedded ${run.chunks_embedded} sections, ${run.published ? "published" : "kept"} version ${run.version ?? "none"}.`
        : "No indexing run recorded by the worker yet.",
    ),
  );
  const failure = h.last_ingestion_failure;
  out.push(
    failure
      ? el("p", { class: "error" }, `Last failure: ${when(failure.failed_at)}${failure.source ? ` in ${failure.source}` : ""}: ${failure.error}`)
      : el("p", {}, "No indexing failure recorded."),
  );
  const m = h.models || {};
  out.push(el("p", { class: "meta" }, `Model ${m.embedder} (${m.query_graph}), reranker ${m.reranker}; server up ${Math.round(h.uptime_s)} s.`));
  return out;
}

function sourcesTable(sources) {
  const names = Object.keys(sources);
  if (!names.length) return el("p", {}, "No source is indexed in this version.");
  const head = ["Source", "Indexed commit", "Indexed", "Files", "Sections", "Last error"];
  return el(
    "table",
    { class: "sources" },
    el("caption", {}, "Sources"),
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
    el(
      "tbody",
      {},
      names.map((name) => {
        const s = sources[name];
        return el(
          "tr",
          {},
          el("th", { scope: "row" }, name),
          el("td", {}, el("code", { class: "commit", title: s.commit }, short(s.commit))),
          el("td", {}, when(s.indexed_at)),
          el("td", { class: "num" }, String(s.files)),
          el("td", { class: "num" }, String(s.chunks)),
          el("td", {}, s.last_error || "none"),
        );
      }),
    ),
  );
}

// --- connect an agent: the configurations of server/clients.py ------------------------------

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
    el("p", {}, "Stdio entries start docdex on the client's machine: put in your paths. The same as plain text: ", el("a", { href: "/clients.txt" }, "/clients.txt"), "."),
  ];
  for (const config of c.configs) {
    parts.push(el("h2", {}, `${config.client}: ${config.file} (${config.transport})`), el("pre", {}, el("code", {}, config.text)));
  }
  parts.push(el("h2", {}, "Claude Code, from a shell"), el("pre", {}, el("code", {}, c.commands.join("\n"))));
  $("connect-body").replaceChildren(...parts.filter(Boolean));
}

// --- wiring ----------------------------------------------------------------------------------

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
    if (current.view !== "search") navigate(address({ view: "search", q: current.q, source: current.source, path: current.path }));
    $("q").focus();
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
  search();
});
$("q").addEventListener("input", schedule);
$("path").addEventListener("input", schedule);
$("source").addEventListener("change", search);
$("status-refresh").addEventListener("click", showStatus);
document.addEventListener("click", onClick);
document.addEventListener("keydown", onKey);
window.addEventListener("popstate", () => {
  if (location.search === routed && current.view === "page") scrollToId(location.hash.slice(1));
  else route();
});
setInterval(() => current.view === "status" && !document.hidden && showStatus(), STATUS_REFRESH_MS);
start();
