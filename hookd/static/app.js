// hookd's operator page: every lane and everything waiting on a human, live.
//
// A client of hookd's REST API (same origin, session cookie) and of its event stream as
// server-sent events (GET /v1/events/sse). State is rebuilt from the API at every (re)connect
// and kept up to date by events; cards are keyed by interaction id, so an event seen twice or a
// refetch never doubles a card, and a reconnect resumes after the last event seen
// (Last-Event-ID, or ?after= for a fresh EventSource). Plain DOM, no build step, no innerHTML
// with data.
"use strict";

const HEADERS = {"content-type": "application/json", "x-hookd-web": "1"};
const HISTORY_MAX = 100;
const MESSAGES_MAX = 200;
const INTERACTION_EVENTS = new Set([
  "question_pending", "question_resolved", "permission_pending", "permission_resolved",
  "elicitation_pending", "elicitation_resolved",
  "human_input_requested", "interaction_answered", "answer_delivered", "answer_adopted",
  "answer_superseded", "answer_refused", "hold_ended", "hold_resumed",
]);
const LANE_EVENTS = new Set([
  "lane_changed", "hook_received", "session_started", "session_ended", "hooks_unarmed", "hooks_armed",
  "question_pending", "question_resolved", "permission_pending", "permission_resolved", "human_input_requested",
  "elicitation_pending", "elicitation_resolved", "inbox_queued", "inbox_delivered", "inbox_cancelled", "builder_unspawned",
  "agent_notified", "subagent_started", "subagent_ended", "hooks_changed", "hooks_restored",
]);
const INBOX_EVENTS = new Set(["inbox_queued", "inbox_delivered", "inbox_adopted", "inbox_cancelled",
                              "answer_superseded", "answer_refused"]);
const WAITING = new Set(["stalled", "failed", "dead", "waiting_question", "waiting_permission"]);

// Everything the page knows. window.hookdPage exposes it for diagnostics (the browser tests
// read `seen`: every event seq received, in order).
const S = {
  lastSeq: null,
  seen: [],
  interactions: new Map(),  // id -> interaction (as GET /v1/interactions/{id})
  cards: new Map(),         // id -> {el, pending, revision, sig}
  lanes: [],
  builders: new Map(),      // builder -> its /v1/status entry
  messages: [],
  user: null,
  es: null,
  backoff: 500,
  signedOut: false,
  signingOut: false,
  connects: 0,
  loaded: false,    // the API was read at least once (before: no empty state is claimed)
  live: false,      // the event stream is up and the views are current
  knownAt: null,    // ms: until when the views are known to be current (while not live)
  hub: false,       // the page over the hub (`hookd hub serve`): its status lists hosts
};
window.hookdPage = S;

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  let r;
  try {
    r = await fetch(path, {
      method, headers: HEADERS, credentials: "same-origin", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, "unreachable", "hookd is not reachable (is `hookd serve` running?)");
  }
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (r.status === 401) signedOut();
  if (!r.ok) {
    const err = data && data.error ? data.error : {code: "http", message: `HTTP ${r.status}`};
    throw new ApiError(r.status, err.code, err.message);
  }
  return data;
}

// --- small DOM helpers ------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const $ = (id) => document.getElementById(id);

function ago(ts) {
  if (!ts) return "-";
  const s = Math.max(0, Date.now() / 1000 - ts);
  if (s < 60) return `${Math.floor(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d`;
}

function since(ts, suffix) {
  return h("span", {class: "since", "data-since": ts || "", "data-suffix": suffix || "",
                    title: ts ? new Date(ts * 1000).toLocaleString() : ""}, ago(ts) + (ts ? suffix || "" : ""));
}

function tick() {
  for (const el of document.querySelectorAll("[data-since]")) {
    const ts = parseFloat(el.dataset.since);
    if (ts) el.textContent = ago(ts) + (el.dataset.suffix || "");
  }
  for (const el of document.querySelectorAll("[data-until]")) el.textContent = countdown(el.dataset.words, el.dataset.until);
}

// A builder's opt-in default answer (GET /v1/questions' `default_answer`: its words and when),
// as `hookd questions` says it: "answers Blue in 4 min unless you answer".
function countdown(words, at) {
  const left = parseFloat(at) - Date.now() / 1000;
  if (!(left >= 1)) return `${words} now unless you answer`;  // due: the daemon's next pass gives it
  const span = left < 60 ? `${Math.ceil(left)} s` : left < 3600 ? `${Math.ceil(left / 60)} min`
    : `${Math.floor(left / 3600)} h ${Math.ceil((left % 3600) / 60)} min`;
  return `${words} in ${span} unless you answer`;
}

function freshId(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// --- interactions: pending cards and history ------------------------------------------------

function questionsOf(i) {
  return Array.isArray(i.questions) ? i.questions.filter((q) => q && typeof q === "object") : [];
}

function signature(i) {
  // what the human sees on a pending card: a change re-renders it (with a new response_id)
  return JSON.stringify([i.kind, i.questions, i.input, i.tool_name]);
}

function cardHead(i) {
  const kind = i.kind === "permission" || i.kind === "plan" ? i.kind : i.kind === "async" ? "async question"
    : i.kind === "elicitation" ? "elicitation" : "question";
  return h("header", {class: "card-head"},
    h("span", {class: "kind"}, kind),
    h("span", {class: "builder"}, i.builder),
    i.agent_id ? h("span", {class: "subagent", "data-agent-id": i.agent_id},
      `subagent ${i.agent_type || "of unknown type"} (${i.agent_id})`) : null,
    i.tool_name && (i.kind === "permission" || i.kind === "elicitation") ? h("span", {class: "tool"}, i.tool_name) : null,
    h("span", {class: "age"}, "asked ", since(i.created_at, " ago")),
    h("code", {class: "iid"}, i.id));
}

// An elicitation's form field (GET /v1/questions' `fields`): a select for an enum, a checkbox
// for a boolean, a number input for integer / number, else text. Its value as JSON: the daemon
// checks the whole against the server's schema.
function fieldInput(f) {
  const attrs = {name: f.name, "aria-label": f.title || f.name, "data-type": f.type || ""};
  if (Array.isArray(f.enum)) {
    return h("select", attrs, ...(f.required ? [] : [h("option", {value: ""}, "")]),
             ...f.enum.map((v) => h("option", {value: String(v)}, String(v))));
  }
  if (f.type === "boolean") return h("input", {...attrs, type: "checkbox"});
  if (f.type === "integer" || f.type === "number") {
    return h("input", {...attrs, type: "number", step: f.type === "integer" ? "1" : "any"});
  }
  return h("input", {...attrs, type: "text"});
}

function fieldValue(input) {
  if (input.type === "checkbox") return input.checked;
  if (input.value === "") return undefined;
  if (input.dataset.type === "integer" || input.dataset.type === "number") return Number(input.value);
  return input.value;
}

function elicitationCard(i, card, note) {
  const shown = i.input || {};
  card.append(h("p", {class: "ask"}, h("strong", {}, shown.server || i.tool_name || "a tool server"),
    " asks ", i.builder, "'s human:"));
  card.append(h("p", {class: "qtext elicit-message"}, shown.message || ""));
  if (shown.mode === "url") card.append(h("p", {}, "Open: ", h("code", {class: "elicit-url"}, shown.url || "")));
  const form = h("form", {class: "answer elicitation-form"});
  for (const f of Array.isArray(i.fields) ? i.fields : []) {
    const input = fieldInput(f);
    form.append(h("label", {class: "field"},
      h("span", {class: "olabel"}, f.title || f.name, f.required ? " *" : ""), input,
      f.description ? h("span", {class: "odesc"}, f.description) : null));
  }
  const accept = h("button", {type: "submit", class: "accept primary"}, "Accept");
  const decline = h("button", {type: "button", class: "decline"}, "Decline");
  const cancel = h("button", {type: "button", class: "cancel"}, "Cancel");
  decline.addEventListener("click", () => submit(card, {decision: "decline"}));
  cancel.addEventListener("click", () => submit(card, {decision: "cancel"}));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const content = {};
    for (const input of form.querySelectorAll("[name]")) {
      const v = fieldValue(input);
      if (v !== undefined) content[input.name] = v;
    }
    submit(card, {decision: "accept", content});
  });
  form.append(h("div", {class: "actions"}, accept, decline, cancel, note));
  card.append(form);
  return card;
}

// Whether a remote answer reaches the agent (GET /v1/questions' `held`, kept current by the
// hold_ended / hold_resumed events): when no hook holds a prompt, plan or elicitation any more,
// its card says the desk answers it and its buttons are off; a question's answer from here is
// still taken, as a message for the agent's next turn, and its card says so.
function setHeld(card, i) {
  const deskOnly = i.held === false;
  card.classList.toggle("desk-only", deskOnly);
  let el = card.querySelector(".held-note");
  if (!deskOnly) {
    if (el) el.remove();
  } else {
    if (!el) {
      el = h("p", {class: "held-note", role: "status"});
      card.insertBefore(el, card.children[1] || null);
    }
    el.textContent = i.kind === "question"
      ? "No hook is holding this question any more: the menu waits at the desk; an answer from here goes to the agent as a message at its next turn."
      : `No hook is holding this ${i.kind === "permission" ? "prompt" : i.kind} any more: answer it at the desk.`;
  }
  if (i.kind !== "question" && !card.busy) {
    for (const b of card.querySelectorAll("button")) if (!b.closest(".dismiss-row")) b.disabled = deskOnly;
  }
}

// A pending card: what is asked and how to answer it, then the builder's default answer's
// countdown (when it opted in) and the dismissal of a stale one (POST .../dismiss: recorded
// with who and why; a held hook is let go with no decision, so the desk decides).
function pendingCard(i) {
  const card = pendingBody(i);
  if (i.default_answer && i.default_answer.at) {
    const d = i.default_answer;
    card.insertBefore(h("p", {class: "default-answer", role: "timer", "data-until": d.at, "data-words": d.answer},
      countdown(d.answer, d.at)), card.children[1] || null);
  }
  const why = h("input", {type: "text", class: "dismiss-reason", placeholder: "Why dismiss it (recorded)",
                          "aria-label": "why dismiss it"});
  const dismiss = h("button", {type: "button", class: "dismiss"}, "Dismiss");
  const note = h("span", {class: "dismiss-note", role: "status"});  // (not .note: the answer's own)
  why.addEventListener("input", () => { if (note.classList.contains("error")) note.textContent = ""; });
  dismiss.addEventListener("click", async () => {
    if (!why.value.trim()) {
      note.textContent = "Say why it is dismissed: it is recorded.";
      note.className = "dismiss-note error";
      why.focus();
      return;
    }
    dismiss.disabled = true;
    try {
      const r = await api("POST", `/v1/interactions/${encodeURIComponent(i.id)}/dismiss`,
                          {reason: why.value.trim(), surface: "web", actor: S.user || undefined});
      upsert(r.interaction);
    } catch (e) {
      note.textContent = e.message;
      note.className = "dismiss-note error";
      if (e.status === 409 || e.status === 404) refreshInteraction(i.id);
    } finally {
      dismiss.disabled = false;
    }
  });
  card.append(h("details", {class: "dismiss-row"}, h("summary", {}, "stale? dismiss it"),
    h("div", {class: "actions"}, why, dismiss, note)));
  setHeld(card, i);
  return card;
}

function pendingBody(i) {
  const card = h("article", {class: `card pending ${i.kind}`, "data-id": i.id, "data-state": i.state,
                             "data-revision": i.revision});
  card.responseId = freshId("web-");
  card.append(cardHead(i));
  const note = h("p", {class: "note", role: "status"});
  if (i.kind === "elicitation") return elicitationCard(i, card, note);
  if (i.kind === "plan") {
    card.append(...planPendingNodes(card, i, note));
    return card;
  }
  if (i.kind === "permission") {
    // the tool call as a person reads it (toolview.js); a destructive-looking one offers no
    // default: both buttons plain, neither primary
    const v = i.tool_view;
    const risky = !!(v && v.destructive);
    if (risky) card.classList.add("destructive");
    card.append(h("p", {class: "ask"}, `${i.builder} wants to run `, h("strong", {}, i.tool_name || "a tool"),
      " ", toolViewBadge(v)));
    card.append(...toolViewNodes(v, i.input));
    card.append(h("details", {class: "raw-input"}, h("summary", {}, "input as sent (JSON)"),
      h("pre", {class: "input"}, JSON.stringify(i.input, null, 2))));
    const msg = h("textarea", {class: "deny-message", rows: 2, placeholder: "Message to the agent (sent with Deny)",
                               "aria-label": "deny message"});
    const allow = h("button", {type: "button", class: risky ? "allow" : "allow primary"}, "Allow");
    const deny = h("button", {type: "button", class: "deny"}, "Deny");
    allow.addEventListener("click", () => submit(card, {decision: "allow"}));
    deny.addEventListener("click", () => submit(card, {decision: "deny", message: msg.value.trim() || null}));
    card.append(msg, h("div", {class: "actions"}, allow, deny, note));
    return card;
  }
  const form = h("form", {class: "answer"});
  const qs = questionsOf(i);
  qs.forEach((q, qi) => {
    const name = `${i.id}-q${qi}`;
    const options = Array.isArray(q.options) ? q.options : [];
    const multi = !!q.multiSelect;
    const fs = h("fieldset", {class: "q", "data-question": q.question || ""},
      h("legend", {}, q.header ? h("span", {class: "qheader"}, q.header) : null, h("span", {class: "qtext"}, q.question || "")));
    const other = h("input", {type: "text", class: "other", name: `${name}-other`,
                              placeholder: options.length ? "Other (free text)" : "Your answer",
                              "aria-label": options.length ? "Other" : "Answer"});
    for (const o of options) {
      const input = h("input", {type: multi ? "checkbox" : "radio", name, value: o.label});
      if (!multi) input.addEventListener("change", () => { if (input.checked) other.value = ""; });
      fs.append(h("label", {class: "option"}, input,
        h("span", {class: "olabel"}, o.label),
        o.description ? h("span", {class: "odesc"}, o.description) : null));
    }
    if (!multi) {
      other.addEventListener("input", () => {
        if (other.value) for (const r of fs.querySelectorAll("input[type=radio]")) r.checked = false;
      });
    }
    fs.append(options.length ? h("label", {class: "option other-row"}, h("span", {class: "olabel"}, "Other"), other)
                             : h("label", {class: "free-row"}, other));
    form.append(fs);
  });
  const send = h("button", {type: "submit", class: "submit"}, "Answer");
  form.append(h("div", {class: "actions"}, send, note));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const answers = {};
    for (const fs of form.querySelectorAll("fieldset.q")) {
      const options = Array.from(fs.querySelectorAll("input:checked"), (x) => x.value);
      const text = fs.querySelector("input.other").value.trim();
      if (!options.length && !text) {
        note.textContent = `Choose an option or write an answer for: ${fs.dataset.question}`;
        note.className = "note error";
        return;
      }
      answers[fs.dataset.question] = {options, text: text || null};
    }
    submit(card, {answers});
  });
  card.append(form);
  return card;
}

async function submit(card, body) {
  if (card.busy || !card.isConnected || card.classList.contains("resolved")) return;
  const i = S.interactions.get(card.dataset.id);
  if (!i || i.state !== "pending") return;
  card.busy = true;
  const buttons = card.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  const note = card.querySelector(".note");
  note.textContent = "Sending…";
  note.className = "note";
  const req = {...body, response_id: card.responseId, revision: i.revision, surface: "web", actor: S.user};
  if (i.input_hash) req.input_hash = i.input_hash;
  try {
    const r = await api("POST", `/v1/interactions/${encodeURIComponent(i.id)}/answer`, req);
    if (r.interaction) upsert(r.interaction);
    if (card.isConnected) {
      note.textContent = r.warning && r.message_id ? `Not delivered to this prompt: queued as inbox message ${r.message_id}.`
        : r.warning || (r.duplicate ? "Already sent." : "Sent.");
      note.className = r.warning ? "note warn" : "note";
    }
    confirmAnswer(r.interaction || i, r);
  } catch (e) {
    note.textContent = e.message;
    note.className = "note error";
    if (e.status === 409 || e.status === 404) {
      // answered or closed elsewhere meanwhile: the card moves to History with its note, so
      // the refusal stays in sight as a toast
      toast([`Not sent: ${e.message} — `, h("a", {href: "#history"}, "see History")], true);
      refreshInteraction(i.id);
    }
  } finally {
    card.busy = false;
    if (card.isConnected && !card.classList.contains("resolved")) {
      buttons.forEach((b) => { b.disabled = false; });
      setHeld(card, S.interactions.get(card.dataset.id) || i);
    }
  }
}

// How an interaction ended (allowed / denied for a permission prompt, answered, dismissed,
// expired, superseded, orphaned, empty) and who answered where ("on the page by ana", "from the
// CLI by ana", "at the desk"): the API's `outcome` and `by`, the words the CLI prints too
// (hookd.models.outcome_of, by_text); none of them is mapped here.
function outcomeOf(i) {
  return i.outcome || i.state;
}

function byText(i) {
  return i.by || "";
}

function hasOptions(i, question) {
  const q = questionsOf(i).find((x) => x.question === question);
  return !!(q && Array.isArray(q.options) && q.options.length);
}

// One question's answer as nodes: each chosen option a label of its own, then the "Other"
// text (the selections keep them apart; the raw answer string joins them with ", ").
function answerNodes(i, sel) {
  const labels = (sel.labels || []).map((l) => h("span", {class: "sel-label"}, l));
  if (sel.other === null || sel.other === undefined || sel.other === "") return labels;
  if (!hasOptions(i, sel.question)) return [h("span", {class: "sel-text"}, sel.other)];
  return [...labels, h("span", {class: "sel-other"}, h("span", {class: "sel-other-tag"}, "Other"), " ", sel.other)];
}

function answerRows(i) {
  if (Array.isArray(i.selections) && i.selections.length) {
    return i.selections.map((sel) => [sel.question, answerNodes(i, sel)]);
  }
  return Object.entries(i.answers || {}).map(([q, v]) => [q, [typeof v === "string" ? v : JSON.stringify(v)]]);
}

function answerSummary(i) {
  if (Array.isArray(i.selections) && i.selections.length) {
    return i.selections.map((sel) => [...(sel.labels || []), sel.other].filter((x) => x).join(" · ")).join("; ");
  }
  return Object.values(i.answers || {}).map((v) => typeof v === "string" ? v : JSON.stringify(v)).join("; ");
}

const TOAST_MS = 6000;
const TOAST_WARN_MS = 15000;
let toastTimer = null;

function toast(nodes, warn) {
  const t = $("toast");
  t.replaceChildren(...nodes);
  t.className = warn ? "toast warn" : "toast";
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, warn ? TOAST_WARN_MS : TOAST_MS);
}

// After Answer / Allow / Deny: what was sent, for a few seconds (the card itself moves to
// History), or the receipt's warning when the answer went another way (an inbox message).
function confirmAnswer(i, r) {
  if (r.warning) {
    toast([r.warning], true);
    return;
  }
  const link = h("a", {href: "#history"}, "see History");
  let what;
  if (i.kind === "permission") what = `${i.decision === "deny" ? "Denied" : "Allowed"} ${i.tool_name || "the tool"}`;
  else if (i.kind === "elicitation") what = `${i.decision || "answered"}: ${i.tool_name || "the tool server"}`;
  else if (i.kind === "plan") what = i.decision === "deny" ? "Sent the plan back" : `Approved the plan (${(i.answers || {}).mode || "manual"})`;
  else what = `Answered ${answerSummary(i)}`.trim();
  const queued = r.delivery === "inbox" && r.message_id ? ` (queued for ${i.builder}'s next turn as ${r.message_id})` : "";
  toast([`${what}${queued} — `, link], false);
}

function historyCard(i) {
  const card = h("article", {class: `card resolved ${i.kind}`, "data-id": i.id, "data-state": i.state,
                             "data-surface": i.surface || ""});
  card.append(cardHead(i));
  if (i.kind === "permission") {
    const v = i.tool_view;
    card.append(h("p", {class: "ask"}, h("strong", {}, i.tool_name || "tool"), " ",
      v && typeof v.summary === "string" ? h("span", {class: "tv-summary"}, v.summary)
        : h("code", {class: "input-inline"}, JSON.stringify(i.input)), " ", toolViewBadge(v)));
    if (v && typeof v.detail === "string" && !(v.kind === "command" && v.summary === v.detail)) {
      card.append(h("details", {class: "tool-view-more"}, h("summary", {}, "the call"), toolViewBody(v)));
    }
  }
  const outcome = outcomeOf(i);
  card.dataset.outcome = outcome;
  const what = h("dl", {class: "answers"});
  if (i.kind === "plan") {
    if (i.plan) card.append(h("details", {class: "plan-more"}, h("summary", {}, "the plan"), planNodes(i.plan)));
    if (i.decision === "allow" && i.answers && i.answers.mode) what.append(h("dt", {}, "mode"), h("dd", {class: "answer"}, i.answers.mode));
    if (i.message) what.append(h("dt", {}, i.state === "dismissed" ? "why" : "feedback"), h("dd", {class: "answer"}, i.message));
  } else if (i.kind === "permission") {
    if (i.message) what.append(h("dt", {}, i.state === "dismissed" ? "why" : "message"), h("dd", {class: "answer"}, i.message));
  } else if (i.kind === "elicitation") {
    card.append(h("p", {class: "ask"}, h("strong", {}, i.tool_name || "tool server"), " ",
      (i.input && i.input.message) || ""));
    if (i.decision) what.append(h("dt", {}, "action"), h("dd", {class: "answer"}, i.decision));
    for (const [k, v] of Object.entries(i.answers || {})) {
      what.append(h("dt", {}, k), h("dd", {class: "answer"}, typeof v === "string" ? v : JSON.stringify(v)));
    }
  } else {
    for (const [q, nodes] of answerRows(i)) what.append(h("dt", {}, q), h("dd", {class: "answer"}, nodes));
  }
  if (i.state === "dismissed" && i.message && !["permission", "plan"].includes(i.kind)) {
    what.append(h("dt", {}, "why"), h("dd", {class: "answer"}, i.message));
  }
  const by = byText(i);
  card.append(h("p", {class: "outcome"},
    h("span", {class: `badge outcome-${outcome}`}, outcome), " ",
    by ? h("span", {class: "by"}, by) : null, " ", i.resolved_at ? since(i.resolved_at, " ago") : null));
  if (what.children.length) card.append(what);
  const trail = [];
  // how the answer reached the agent, in the CLI's words (hookd events, hookd answer): a hook
  // (the held PermissionRequest, a pre-registered answer at PreToolUse) or the inbox
  if (i.delivered_at) trail.push(i.delivered_via === "inbox" ? "reached the agent through its inbox"
    : "reached the agent through its hook");
  if (i.adopted_at) trail.push("adopted by the agent");
  if (trail.length) card.append(h("p", {class: "trail"}, trail.join(" · ")));
  if (i.warning) card.append(h("p", {class: "note warn"}, i.warning));
  return card;
}

function insertSorted(list, el, key, desc) {
  el.dataset.sort = key;
  for (const other of list.children) {
    const k = parseFloat(other.dataset.sort);
    if (desc ? key > k : key < k) { list.insertBefore(el, other); return; }
  }
  list.append(el);
}

function upsert(i) {
  if (S.signedOut) return;  // (a read answered before the sign-out fills nothing)
  const old = S.interactions.get(i.id);
  if (old && old.revision > i.revision) return;  // never go back to an older read
  S.interactions.set(i.id, i);
  const prev = S.cards.get(i.id);
  if (i.state === "pending") {
    const sig = signature(i);
    if (prev && prev.pending && prev.sig === sig) {
      prev.el.dataset.revision = i.revision;
      prev.revision = i.revision;
      setHeld(prev.el, i);  // (in place: what the human has typed or chosen stays)
      return;
    }
    const el = pendingCard(i);
    if (prev) prev.el.remove();
    insertSorted($("pending-list"), el, i.created_at, false);
    S.cards.set(i.id, {el, pending: true, revision: i.revision, sig});
  } else {
    if (prev && !prev.pending && prev.revision === i.revision) return;
    const el = historyCard(i);
    if (prev) prev.el.remove();
    insertSorted($("history-list"), el, i.resolved_at || i.created_at, true);
    S.cards.set(i.id, {el, pending: false, revision: i.revision});
    const list = $("history-list");
    while (list.children.length > HISTORY_MAX) {
      const last = list.lastElementChild;
      S.cards.delete(last.dataset.id);
      S.interactions.delete(last.dataset.id);
      last.remove();
    }
  }
  counts();
}

async function loadInteractions(replace) {
  const [pending, resolved] = await Promise.all([
    api("GET", "/v1/questions?state=pending"), api("GET", "/v1/questions?state=resolved&limit=100")]);
  if (replace) {  // another log: what was shown goes only once the new one is read (not when the read fails)
    S.interactions.clear();
    for (const c of S.cards.values()) c.el.remove();
    S.cards.clear();
  }
  resolved.sort((a, b) => (b.resolved_at || 0) - (a.resolved_at || 0));
  for (const i of resolved.slice(0, HISTORY_MAX)) upsert(i);
  for (const i of pending) upsert(i);
  // a card still shown as pending that the API no longer lists as pending is refetched
  const ids = new Set(pending.map((i) => i.id));
  for (const [id, c] of S.cards) if (c.pending && !ids.has(id)) refreshInteraction(id);
}

const refetch = new Set();
let refetchTimer = null;

function refreshInteraction(id) {
  refetch.add(id);
  if (refetchTimer === null) {
    refetchTimer = setTimeout(async () => {
      refetchTimer = null;
      const ids = Array.from(refetch);
      refetch.clear();
      await Promise.all(ids.map(async (x) => {
        try { upsert(await api("GET", `/v1/interactions/${encodeURIComponent(x)}`)); } catch (e) { /* gone or offline */ }
      }));
    }, 30);
  }
}

// --- lanes and messages -------------------------------------------------------------------

const openCompose = new Set();
const composeKeys = new Map();

function laneRows() {
  const seen = new Set(S.lanes.map((l) => l.builder));
  const rows = S.lanes.map((l) => ({...l}));
  for (const [b] of S.builders) {
    if (!seen.has(b)) rows.push({builder: b, state: "unknown", since: null, pending: [], queued: 0, detail: "no hook yet"});
  }
  return rows;
}

// each cell names its column (data-label, from the table's head): on a narrow screen a row
// stacks into a card and the names show beside the values (hookd.css)
function labelCells(table) {
  const names = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
  for (const tr of table.querySelectorAll("tbody tr:not(.compose):not(.hooks-changed)")) {
    Array.from(tr.children).forEach((td, k) => { if (names[k]) td.dataset.label = names[k]; });
  }
}

// The agent's last message to its human (PushNotification, SendUserMessage: the lane's
// `notified`) on a line of its own under the state; the detail then ends without it.
function laneDetail(l) {
  const said = l.notified ? `; the agent said: ${l.notified}` : "";
  const base = detailText(l);
  const detail = said && base && base.endsWith(said) ? base.slice(0, -said.length) : base;
  return [detail ? h("div", {class: "detail"}, detail) : null,
    l.notified ? h("div", {class: "agent-said"}, h("span", {class: "said-label"}, "the agent says: "),
      h("q", {class: "said-text"}, l.notified), " ", since(l.notified_at, " ago")) : null];
}

// a lane's running subagents (GET /v1/lanes' `subagents`): each one's kind, id, what it waits on
function subagentList(l) {
  const subs = l.subagents || [];
  if (!subs.length) return null;
  return h("ul", {class: "subagents"}, subs.map((s) =>
    h("li", {"data-agent-id": s.agent_id, "data-state": s.waiting},
      "↳ subagent ", h("strong", {}, s.agent_type || "of unknown type"), " ", h("code", {}, s.agent_id), " ",
      h("span", {class: `lane-state state-${s.waiting}`}, s.waiting),
      s.pending.length ? ` on ${s.pending.join(", ")}` : "", " ", since(s.started_at))));
}

function renderLanes() {
  const body = $("lanes").querySelector("tbody");
  const focused = document.activeElement && document.activeElement.closest("tr.compose");
  const drafts = new Map();
  for (const ta of body.querySelectorAll("tr.compose textarea")) drafts.set(ta.dataset.builder, ta.value);
  const rows = laneRows();
  body.replaceChildren();
  for (const l of rows) {
    const b = S.builders.get(l.builder) || {};
    const waiting = WAITING.has(l.state);
    const btn = h("button", {type: "button", class: "message-btn", "data-builder": l.builder}, "Message");
    btn.addEventListener("click", () => {
      if (openCompose.has(l.builder)) openCompose.delete(l.builder); else openCompose.add(l.builder);
      renderLanes();
      const ta = body.querySelector(`tr.compose[data-builder="${CSS.escape(l.builder)}"] textarea`);
      if (ta) ta.focus();
    });
    body.append(h("tr", {class: `lane ${waiting ? "waiting" : ""}`, "data-builder": l.builder, "data-state": l.state},
      h("td", {class: "builder"}, l.builder),
      h("td", {}, b.harness || "-"),
      b.worktree ? h("td", {class: "worktree", title: b.worktree}, b.worktree)
        : h("td", {class: "worktree", title: b.settings_file || ""},
            b.settings_file ? h("span", {class: "settings-file"}, `settings file: ${b.settings_file}`) : "-"),
      h("td", {}, h("span", {class: `lane-state state-${l.state}`, title: l.detail || ""}, l.state),
        ...laneDetail(l), subagentList(l)),
      h("td", {}, l.since ? since(l.since) : "-"),
      h("td", {class: "pending-count"}, String((l.pending || []).length)),
      h("td", {class: "queued-count"}, String(l.queued || 0)),
      h("td", {}, b.last_hook_at ? since(b.last_hook_at, " ago") : "-"),
      h("td", {}, btn)));
    if (l.hooks_changed) body.append(hooksBanner(l));
    if (openCompose.has(l.builder)) body.append(composeRow(l.builder, drafts.get(l.builder) || ""));
  }
  labelCells($("lanes"));
  $("lanes-empty").hidden = rows.length > 0;
  if (focused) {
    const ta = body.querySelector(`tr.compose[data-builder="${CSS.escape(focused.dataset.builder)}"] textarea`);
    if (ta) ta.focus();
  }
  counts();
}

// the lane's detail; the hooks' warning it starts with is the banner's (hooksBanner)
function detailText(l) {
  const prefix = l.hooks_changed ? `hooks stopped working: ${l.hooks_changed.reason}; ` : null;
  return prefix && (l.detail || "").startsWith(prefix) ? l.detail.slice(prefix.length) : l.detail;
}

// a lane whose hooks stopped working (GET /v1/lanes' hooks_changed): a banner under its row,
// with why and the command that restores them
function hooksBanner(l) {
  const w = l.hooks_changed;
  return h("tr", {class: "hooks-changed", "data-builder": l.builder},
    h("td", {colspan: "9"}, h("div", {class: "banner hooks-changed", role: "alert"},
      h("strong", {}, `${l.builder}'s hooks stopped working: `), w.reason || "",
      h("div", {}, "To restore them: ", h("code", {class: "fix"}, w.fix || `hookd spawn ${l.builder} again`)))));
}

// the last note of each builder's compose row (sent, or why not): kept across re-renders of the
// lanes, which replace the row while a send is on its way
const composeNotes = new Map();

function composeRow(builder, draft) {
  const ta = h("textarea", {rows: 2, "data-builder": builder, placeholder: `Message to ${builder}'s agent`,
                            "aria-label": `message to ${builder}`});
  ta.value = draft;
  const saved = composeNotes.get(builder) || {text: "", cls: "note"};
  const note = h("span", {class: saved.cls, role: "status"}, saved.text);
  const send = h("button", {type: "submit", class: "send"}, "Send");
  const form = h("form", {class: "compose-form"}, ta, send, note);
  // the row on the page now (renderLanes may have replaced this one meanwhile)
  const live = (sel) => document.querySelector(`#lanes tr.compose[data-builder="${CSS.escape(builder)}"] ${sel}`);
  const setNote = (text, cls) => {
    composeNotes.set(builder, {text, cls});
    const n = live(".note");
    if (n) { n.textContent = text; n.className = cls; }
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = ta.value.trim();
    if (!text || send.disabled) return;
    if (!composeKeys.has(builder)) composeKeys.set(builder, freshId("web-"));
    send.disabled = true;
    setNote("Sending…", "note");
    try {
      const r = await api("POST", `/v1/builders/${encodeURIComponent(builder)}/messages`,
        {text, id: composeKeys.get(builder), author: S.user || undefined});
      composeKeys.delete(builder);
      const box = live("textarea");
      if (box && box.value.trim() === text) box.value = "";
      setNote(`${r.message.id} ${r.message.state}`, "note");
      upsertMessage(r.message);
    } catch (e) {
      // (not reachable: said until the page is live again, setConn)
      setNote(e.message, e.status === 0 ? "note error unreachable" : "note error");
    } finally {
      send.disabled = false;
      const b = live("button.send");
      if (b) b.disabled = false;
    }
  });
  const mine = S.messages.filter((m) => m.builder === builder).slice(-5).reverse();
  const list = h("ul", {class: "lane-messages"}, mine.map((m) =>
    h("li", {"data-id": m.id, "data-state": m.state}, h("span", {class: `msg-state state-${m.state}`}, m.state), " ",
      h("code", {}, m.id), " ", m.text, " ", cancelButton(m))));
  return h("tr", {class: "compose", "data-builder": builder}, h("td", {colspan: 9}, form, list));
}

async function loadLanes() {
  const [lanes, status] = await Promise.all([api("GET", "/v1/lanes"), api("GET", "/v1/status")]);
  if (S.signedOut) return;
  S.lanes = lanes;
  S.builders = new Map(status.builders.map((b) => [b.builder, b]));
  if (status.hosts) renderHosts(status.hosts);
  // the page over the hub: what only a host does (dismissing) is not offered (docs/fleet.md)
  S.hub = Boolean(status.hosts);
  document.body.classList.toggle("hub", S.hub);
  renderLanes();
}

// The page over the hub (`hookd hub serve`): its /v1/status lists every host with `seen_at`,
// when its heartbeat was last seen; one line under the header says each host's freshness.
function renderHosts(hosts) {
  let el = $("hosts");
  if (!el) {
    el = h("p", {id: "hosts", class: "hosts"});
    $("banner").before(el);
  }
  el.replaceChildren("hosts: ", ...hosts.flatMap((x, k) => [k ? " · " : "",
    h("span", {class: "host", "data-host": x.host}, h("strong", {}, x.host), " seen ", since(x.seen_at, " ago"))]));
  if (!hosts.length) el.append("none has shipped yet");
}

function upsertMessage(m) {
  if (S.signedOut) return;
  const k = S.messages.findIndex((x) => x.id === m.id);
  if (k >= 0) S.messages[k] = m; else S.messages.push(m);
  renderInbox();
}

// Take back a queued message (POST /v1/messages/{id}/cancel): it is never delivered. Once
// delivered the API refuses (the agent may have read it): the toast says so.
function cancelButton(m) {
  if (m.state !== "queued") return null;
  const b = h("button", {type: "button", class: "cancel-msg", "data-id": m.id,
                         title: "Take it back: it will not be delivered"}, "Cancel");
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      const r = await api("POST", `/v1/messages/${encodeURIComponent(m.id)}/cancel`,
                          {surface: "web", actor: S.user || undefined});
      upsertMessage(r.message);
      toast([`Cancelled ${r.message.id}: it will not be delivered to ${r.message.builder}.`], false);
    } catch (e) {
      b.disabled = false;
      toast([e.message], true);
      later("inbox", loadInbox, 100);
    }
  });
  return b;
}

function renderInbox() {
  const body = $("inbox").querySelector("tbody");
  body.replaceChildren();
  for (const m of S.messages.slice().reverse()) {
    body.append(h("tr", {"data-id": m.id, "data-builder": m.builder, "data-state": m.state},
      h("td", {}, h("code", {}, m.id)),
      h("td", {}, m.builder),
      h("td", {}, h("span", {class: `msg-state state-${m.state}`}, m.state)),
      h("td", {}, m.adopted_via ? `${m.delivered_via || "-"} / ${m.adopted_via}` : m.delivered_via || "-"),
      h("td", {}, m.author),
      h("td", {}, since(m.created_at, " ago")),
      h("td", {class: "text"}, m.text),
      h("td", {class: "msg-actions"}, cancelButton(m))));
  }
  labelCells($("inbox"));
  $("inbox-empty").hidden = S.messages.length > 0;
  // the lanes' compose rows list their builder's recent messages too
  for (const tr of document.querySelectorAll("tr.compose")) {
    const old = tr.querySelector("ul.lane-messages");
    const fresh = composeRow(tr.dataset.builder, "").querySelector("ul.lane-messages");
    if (old && fresh) old.replaceWith(fresh);
  }
  counts();
}

async function loadInbox() {
  const messages = await api("GET", `/v1/messages?limit=${MESSAGES_MAX}`);
  if (S.signedOut) return;
  S.messages = messages;
  renderInbox();
}

const timers = {};
function later(name, fn, ms) {
  if (timers[name]) return;
  timers[name] = setTimeout(() => { timers[name] = null; fn().catch(() => {}); }, ms);
}

// --- counts, tabs, connection ------------------------------------------------------------------

function hms(ms) {  // local HH:MM:SS
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((x) => String(x).padStart(2, "0")).join(":");
}

// What the page reads: the local daemon, or the hub (the page over the hub).
function source() {
  return S.hub ? "the hub" : "hookd";
}

function counts() {
  const pending = $("pending-list").children.length;
  $("count-pending").textContent = pending;
  const empty = $("pending-empty");
  empty.hidden = !S.loaded || pending > 0;
  // only a live page may say that nothing is waiting now
  const what = source();
  empty.textContent = S.live ? "Nothing is waiting on you."
    : S.knownAt ? `Nothing was waiting on you at ${hms(S.knownAt)} (${what} is not reachable now).`
      : `${what} is not reachable: what is waiting on you is unknown.`;
  $("history-empty").hidden = !S.loaded || $("history-list").children.length > 0;
  $("count-lanes").textContent = laneRows().length;
  $("count-inbox").textContent = S.messages.filter((m) => m.state === "queued").length;
  document.title = pending ? `(${pending}) hookd` : "hookd";
}

function showView(view) {
  for (const sec of document.querySelectorAll("section.view")) sec.hidden = sec.dataset.view !== view;
  for (const b of document.querySelectorAll("#tabs button")) b.setAttribute("aria-selected", String(b.dataset.view === view));
}

function setConn(state, text) {
  if (S.signedOut && state !== "signed-out") return;
  const el = $("conn");
  el.dataset.state = state;
  el.textContent = text;
  const live = state === "live";
  if (S.live && !live) S.knownAt = Date.now();  // the views were current until now
  S.live = live;
  if (live) {  // a message the page could not send for want of hookd: nothing to say any more
    for (const [b, n] of composeNotes) if (n.cls.includes("unreachable")) composeNotes.delete(b);
    for (const n of document.querySelectorAll("#lanes tr.compose .note.unreachable")) { n.textContent = ""; n.className = "note"; }
  }
  const off = $("offline");
  off.hidden = live || state === "connecting" || state === "signed-out";
  if (!off.hidden) {
    const what = source();
    off.textContent = S.knownAt && S.loaded
      ? `${what} is not reachable — showing what was known at ${hms(S.knownAt)}; reconnecting…`
      : `${what} is not reachable; reconnecting…`;
  }
  document.body.classList.toggle("stale", !off.hidden);
  counts();
}

// Signed out (the button) or refused (401: the session ended): nothing stale stays on screen,
// only what to do next.
function signedOut(byUser) {
  if (S.signedOut) return;
  S.signedOut = true;
  // a read refused (401) while the sign-out's own request is under way is that sign-out
  byUser = byUser || S.signingOut;
  if (S.es) S.es.close();
  for (const t of Object.values(timers)) clearTimeout(t);
  S.interactions.clear();
  S.cards.clear();
  S.lanes = [];
  S.builders.clear();
  S.messages = [];
  for (const id of ["pending-list", "history-list"]) $(id).replaceChildren();
  for (const id of ["lanes", "inbox"]) $(id).querySelector("tbody").replaceChildren();
  $("who").textContent = "";
  $("toast").hidden = true;
  setConn("signed-out", "signed out");
  document.body.classList.add("signed-out");
  document.title = "hookd";
  const b = $("banner");
  b.textContent = byUser ? "Signed out. Run `hookd open` in a terminal for a new sign-in link."
    : "Not signed in (or the session ended): run `hookd open` in a terminal and use the link it prints.";
  b.hidden = false;
}

async function refreshAll(replace) {
  await Promise.all([loadInteractions(replace), loadLanes(), loadInbox()]);
}

function onEvent(ev) {
  if (S.lastSeq !== null && ev.seq <= S.lastSeq) return;  // never the same event twice
  S.lastSeq = ev.seq;
  S.seen.push(ev.seq);
  $("seq").textContent = `seq ${ev.seq}`;
  const id = ev.data && typeof ev.data.id === "string" ? ev.data.id : null;
  if (INTERACTION_EVENTS.has(ev.kind) && id) refreshInteraction(id);
  if (LANE_EVENTS.has(ev.kind)) later("lanes", loadLanes, 150);
  if (INBOX_EVENTS.has(ev.kind)) later("inbox", loadInbox, 100);
  if (ev.kind === "hub_changed") {  // the page over the hub: a host seen (its freshness), a new host, a command's outcome
    later("lanes", loadLanes, 150);
    if (!ev.data || ev.data.what !== "host_seen") {
      later("inbox", loadInbox, 100);
      later("interactions", loadInteractions, 150);
    }
  }
}

function connect() {
  if (S.signedOut) return;
  const url = S.lastSeq === null ? "/v1/events/sse" : `/v1/events/sse?after=${S.lastSeq}`;
  const es = new EventSource(url);
  S.es = es;
  es.addEventListener("hello", async (m) => {
    const hello = JSON.parse(m.data);
    if (hello.reset || S.lastSeq === null) {
      S.lastSeq = hello.seq;
      $("seq").textContent = `seq ${hello.seq}`;
    }
    S.connects += 1;
    S.backoff = 500;
    try {
      // another log (a new home; the page over the hub at each connect): start over, once it
      // is read; a read that fails (the hub down) keeps what was known, marked stale
      await refreshAll(Boolean(hello.reset));
      S.loaded = true;
      setConn("live", "live");
      document.body.dataset.connects = String(S.connects);
    } catch (e) {
      setConn("error", e.message);
    }
  });
  es.onmessage = (m) => onEvent(JSON.parse(m.data));
  es.onerror = () => {
    if (S.signedOut) return;
    setConn("reconnecting", "reconnecting…");
    if (es.readyState === EventSource.CLOSED) {
      // the browser gave up (an HTTP error, e.g. 401): check why, then start a fresh stream
      // from the last event seen
      es.close();
      const wait = S.backoff;
      S.backoff = Math.min(S.backoff * 2, 5000);
      setTimeout(async () => {
        try { await api("GET", "/v1/web/session"); } catch (e) { if (e.status === 401) return; }
        if (S.es === es) connect();
      }, wait);
    }
  };
}

async function start() {
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => { location.hash = b.dataset.view; });
  }
  window.addEventListener("hashchange", () => showView(location.hash.slice(1) || "pending"));
  showView(location.hash.slice(1) || "pending");
  $("signout").addEventListener("click", async () => {
    S.signingOut = true;
    await api("POST", "/web/signout").catch(() => {});
    signedOut(true);
  });
  try {
    const me = await api("GET", "/v1/web/session");
    S.user = me.user;
    $("who").textContent = `answering as ${me.user}`;
  } catch (e) {
    if (e.status !== 401) setConn("error", e.message);
    return;
  }
  setInterval(tick, 1000);
  connect();
}

start();
