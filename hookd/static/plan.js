// A plan waiting on approval (interaction kind "plan"): the plan's markdown as DOM nodes, and
// its pending card's three choices. The plan is the agent's text: a small markdown subset
// (headings, list items, paragraphs, **bold**, `code`, fenced code) goes in as text nodes only
// (no innerHTML). Loaded before app.js, which calls planPendingNodes / planNodes; these call
// app.js's h() and submit() when a card is built.
"use strict";

// One line's inline markdown (**bold**, `code`) as nodes.
function planInline(text) {
  const out = [];
  const re = /(\*\*([^*]+)\*\*|`([^`]+)`)/g;
  let last = 0, m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
    const el = document.createElement(m[2] !== undefined ? "strong" : "code");
    el.textContent = m[2] !== undefined ? m[2] : m[3];
    out.push(el);
    last = re.lastIndex;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

// The plan's markdown as a <div class="plan">: headings, lists, code blocks, paragraphs.
function planNodes(plan) {
  const root = document.createElement("div");
  root.className = "plan";
  let list = null, para = null, code = null;
  const add = (tag, nodes) => { const el = document.createElement(tag); el.append(...nodes); root.append(el); return el; };
  for (const line of String(plan).split("\n")) {
    if (code) {
      if (line.startsWith("```")) { code = null; } else { code.textContent += line + "\n"; }
      continue;
    }
    if (line.startsWith("```")) { list = para = null; code = add("pre", []); continue; }
    const head = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*]|\d+[.)])\s+(.*)$/.exec(line);
    if (head) { list = para = null; add(`h${Math.min(6, head[1].length + 2)}`, planInline(head[2])); }
    else if (item) {
      para = null;
      if (!list) list = add(/^\s*\d/.test(line) ? "ol" : "ul", []);
      const li = document.createElement("li"); li.append(...planInline(item[1])); list.append(li);
    } else if (!line.trim()) { list = para = null; }
    else if (para) { para.append(document.createTextNode(" "), ...planInline(line)); }
    else { list = null; para = add("p", planInline(line)); }
  }
  return root;
}

// The pending plan card's body: the plan, its file, the feedback box and the three choices
// (the desk's own: approve in auto mode, approve and ask for each edit, send back with feedback).
function planPendingNodes(card, i, note) {
  const nodes = [h("p", {class: "ask"}, `${i.builder} asks you to approve its plan`)];
  nodes.push(i.plan ? planNodes(i.plan) : h("p", {class: "note"}, "(no plan text: the agent wrote no plan file)"));
  if (i.plan_path) nodes.push(h("p", {class: "plan-path"}, h("code", {}, i.plan_path)));
  const fb = h("textarea", {class: "plan-feedback", rows: 2, placeholder: "What to change (sent with Send back)",
                            "aria-label": "feedback"});
  const auto = h("button", {type: "button", class: "plan-auto primary"}, "Approve, auto mode");
  const manual = h("button", {type: "button", class: "plan-manual"}, "Approve, ask for each edit");
  const back = h("button", {type: "button", class: "plan-deny"}, "Send back");
  fb.addEventListener("input", () => { if (note.className === "note error") { note.textContent = ""; note.className = "note"; } });
  auto.addEventListener("click", () => submit(card, {options: ["auto"]}));
  manual.addEventListener("click", () => submit(card, {options: ["manual"]}));
  back.addEventListener("click", () => {
    const text = fb.value.trim();
    if (!text) { note.textContent = "Write what to change first."; note.className = "note error"; return; }
    submit(card, {options: ["deny"], text});
  });
  nodes.push(fb, h("div", {class: "actions"}, auto, manual, back, note));
  return nodes;
}
