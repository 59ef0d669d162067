// A permission prompt's tool call as a person reads it: the API's `tool_view` of a permission
// interaction ({kind: "command"|"diff"|"url"|"json", summary, detail, destructive}) as DOM
// nodes. Everything in it is the agent's text: it goes in as text nodes only (no innerHTML),
// and a URL becomes a link only when it is http(s) (never javascript:, data: or the like).
// Loaded before app.js, which calls toolViewNodes / toolViewBadge.
"use strict";

function tvEl(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined && text !== null) el.textContent = text;
  return el;
}

// The class of one diff line: file header, hunk separator, added, removed, or context.
function diffLineClass(line) {
  if (line.startsWith("+++ ") || line.startsWith("--- ")) return "file";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "ctx";
}

// An http(s) URL as a link (opened in a new tab, no referrer), anything else as plain text.
function urlNode(url) {
  let safe = null;
  try {
    const u = new URL(url);
    if (u.protocol === "http:" || u.protocol === "https:") safe = u.href;
  } catch (e) { safe = null; }
  if (safe === null) return tvEl("span", "tv-url-text", url);
  const a = tvEl("a", "tv-url-link", url);
  a.href = safe;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

// The view's body: a command in a code block, a diff with its lines marked, a URL and the
// agent's prompt, or compact JSON.
function toolViewBody(v) {
  const box = tvEl("div", `tool-view kind-${v.kind}`);
  box.dataset.kind = v.kind;
  if (v.kind === "command") {
    const pre = tvEl("pre", "tv-command");
    pre.append(tvEl("code", null, v.detail));
    box.append(pre);
  } else if (v.kind === "diff") {
    const pre = tvEl("pre", "tv-diff");
    for (const line of v.detail.split("\n")) pre.append(tvEl("span", `dl ${diffLineClass(line)}`, line + "\n"));
    box.append(pre);
  } else if (v.kind === "url") {
    const [url, ...rest] = v.detail.split("\n");
    box.append(tvEl("p", "tv-url"));
    box.lastChild.append(urlNode(url));
    const prompt = rest.join("\n").trim();
    if (prompt) box.append(tvEl("p", "tv-prompt", prompt));
  } else {
    box.append(tvEl("pre", "tv-json", v.detail));
  }
  return box;
}

// The one line to read first, or null when the body already says exactly that (a command
// without a description, a URL, a short input in the generic view).
function toolViewSummary(v) {
  if (!v.summary || v.summary === v.detail) return null;
  if (v.kind === "url" && v.summary === v.detail.split("\n")[0]) return null;
  return tvEl("p", "tv-summary", v.summary);
}

// The "looks destructive" badge (null when the rules did not mark it).
function toolViewBadge(v) {
  if (!v || !v.destructive) return null;
  const b = tvEl("span", "destructive-badge", "looks destructive");
  b.title = "A rule marks this as destructive-looking: no button is the default, read it before you answer.";
  return b;
}

// Summary (if any) and body of a view, or of a bare input when the API gave no view.
function toolViewNodes(v, input) {
  if (!v || typeof v !== "object" || typeof v.detail !== "string") {
    return [tvEl("pre", "input", JSON.stringify(input, null, 2))];
  }
  return [toolViewSummary(v), toolViewBody(v)].filter((x) => x);
}
