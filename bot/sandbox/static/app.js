// The sandbox page: draws the local Slack's state (GET /sandbox/state, polled) the way Slack
// draws Block Kit, and reports clicks and modal submissions to the sandbox server, which sends
// Countersign exactly what Slack would. No build step, no framework.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;
const EMOJI = {
  white_check_mark: "\u2705", x: "\u274c", hourglass: "\u231b", hourglass_flowing_sand: "\u23f3",
  no_entry: "\u26d4", no_entry_sign: "\ud83d\udeab", gear: "\u2699\ufe0f", warning: "\u26a0\ufe0f",
  leftwards_arrow_with_hook: "\u21a9\ufe0f", lock: "\ud83d\udd12", bell: "\ud83d\udd14",
  wave: "\ud83d\udc4b", eyes: "\ud83d\udc40", tada: "\ud83c\udf89", house: "\ud83c\udfe0",
};

const ui = {
  me: new URLSearchParams(location.search).get("as") || localStorage.getItem("sandbox.me") || "",
  pane: localStorage.getItem("sandbox.pane") || "",
  state: null,
  drawn: {},        // what each region was last drawn from, to redraw only on change
  buttons: [],      // the clickable elements of the last drawing, by index
  modalErrors: {},  // errors Countersign returned for the open modal, by block_id
  confirming: false, // a confirm dialog is up: polling must leave the overlay alone
};

// --- text ----------------------------------------------------------------------------------------

function esc(text) {
  return String(text).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// Slack sends &, < and > escaped; show them as written, escaped again for HTML.
function slackText(text) {
  return esc(String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"));
}

function emoji(html) {
  return html.replace(/:([a-z0-9_+-]+):/g, (whole, name) => EMOJI[name] || whole);
}

function plain(obj) {
  if (!obj) return "";
  return obj.emoji === false ? esc(obj.text) : emoji(esc(obj.text));
}

function name(id) {
  return (ui.state && ui.state.names[id]) || id;
}

function prettyDate(when) {
  const day = (d) => d.toDateString();
  const now = new Date();
  const yesterday = new Date(now.getTime() - 86400000);
  if (day(when) === day(now)) return "today";
  if (day(when) === day(yesterday)) return "yesterday";
  return when.toLocaleDateString([], { month: "short", day: "numeric" });
}

function clock(when) {
  return when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// <@U123>, <#C123|name>, <!date^1700000000^{date_short_pretty} at {time}|fallback>, <url|label>
function slackToken(token) {
  const [target, label] = token.split("|", 2);
  if (target.startsWith("@")) return `<span class="mention">@${esc(name(target.slice(1)))}</span>`;
  if (target.startsWith("#")) return `<span class="mention">#${esc(label || target.slice(1))}</span>`;
  if (target.startsWith("!date^")) {
    const [, seconds, format] = target.split("^");
    const when = new Date(Number(seconds) * 1000);
    const shown = format
      .replace("{date_short_pretty}", prettyDate(when))
      .replace("{date_num}", when.toISOString().slice(0, 10))
      .replace("{time}", clock(when));
    return `<time title="${esc(label || "")}">${esc(shown)}</time>`;
  }
  if (target.startsWith("!")) return `<span class="mention">@${esc(target.slice(1))}</span>`;
  if (/^https?:\/\//.test(target)) {
    return `<a href="${esc(target)}" target="_blank" rel="noopener">${slackText(label || target)}</a>`;
  }
  return slackText(`<${token}>`);
}

function inline(text) {
  return emoji(slackText(text))
    .replace(/\*([^*\n]+)\*/g, "<b>$1</b>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s.,:;!?)])/g, "$1<i>$2</i>")
    .replace(/~([^~\n]+)~/g, "<s>$1</s>");
}

// Slack's mrkdwn: code first (shown as written), then tokens, then quotes and emphasis by line.
function mrkdwn(text) {
  const kept = [];
  const keep = (html) => `\u0000${kept.push(html) - 1}\u0000`;
  let source = String(text)
    .replace(/```\n?([\s\S]*?)\n?```/g, (_, code) => keep(`<pre>${slackText(code)}</pre>`))
    .replace(/`([^`\n]+)`/g, (_, code) => keep(`<code>${slackText(code)}</code>`))
    .replace(/<([^<>\n]+)>/g, (_, token) => keep(slackToken(token)));
  const parts = [];
  let quote = [];
  const flush = () => {
    if (quote.length) parts.push(`<blockquote>${quote.join("<br>")}</blockquote>`);
    quote = [];
  };
  for (const line of source.split("\n")) {
    if (line.startsWith(">")) {
      quote.push(inline(line.slice(1)));
    } else {
      flush();
      parts.push(inline(line) + "<br>");
    }
  }
  flush();
  const html = parts.join("").replace(/<br>$/, "");
  return html.replace(/\u0000(\d+)\u0000/g, (_, n) => kept[Number(n)]);
}

function textObject(obj) {
  if (!obj) return "";
  return obj.type === "mrkdwn" ? mrkdwn(obj.text) : plain(obj);
}

// --- Block Kit -----------------------------------------------------------------------------------

// A button remembers where it is (message or view) so a click can name it to the server.
function button(element, where, blockIndex) {
  const index = ui.buttons.push({ element, where, blockIndex }) - 1;
  const style = element.style ? ` btn-${esc(element.style)}` : "";
  return `<button type="button" class="btn${style}" data-button="${index}">${plain(element.text)}</button>`;
}

function inputBlock(block) {
  const element = block.element || {};
  const id = `input-${esc(block.block_id)}`;
  const attributes = `id="${id}" data-block="${esc(block.block_id)}" data-action="${esc(element.action_id)}"` +
    (element.max_length ? ` maxlength="${Number(element.max_length)}"` : "") +
    (element.placeholder ? ` placeholder="${esc(element.placeholder.text)}"` : "");
  const field = element.type !== "plain_text_input"
    ? `<p class="b-unknown">This sandbox cannot show ${esc(element.type)} inputs yet.</p>`
    : element.multiline
      ? `<textarea ${attributes} rows="4">${esc(element.initial_value || "")}</textarea>`
      : `<input type="text" ${attributes} value="${esc(element.initial_value || "")}">`;
  const error = ui.modalErrors[block.block_id];
  return `<div class="b-input${error ? " has-error" : ""}">
    <label for="${id}">${plain(block.label)}${block.optional ? ' <span class="optional">(optional)</span>' : ""}</label>
    ${field}
    ${error ? `<p class="error">${esc(error)}</p>` : ""}
    ${block.hint ? `<p class="b-hint">${plain(block.hint)}</p>` : ""}
  </div>`;
}

function renderBlock(block, where, index) {
  switch (block.type) {
    case "header":
      return `<div class="b-header">${plain(block.text)}</div>`;
    case "section": {
      const text = block.text ? `<div class="b-text">${textObject(block.text)}</div>` : "";
      const fields = block.fields
        ? `<div class="b-fields">${block.fields.map((f) => `<div>${textObject(f)}</div>`).join("")}</div>`
        : "";
      const accessory = block.accessory && block.accessory.type === "button"
        ? `<div class="b-accessory">${button(block.accessory, where, index)}</div>` : "";
      return `<div class="b-section"><div>${text}${fields}</div>${accessory}</div>`;
    }
    case "context":
      return `<div class="b-context">${block.elements.map((e) =>
        e.type === "image" ? `<img src="${esc(e.image_url)}" alt="${esc(e.alt_text)}">` : `<span>${textObject(e)}</span>`
      ).join("")}</div>`;
    case "divider":
      return `<hr class="b-divider">`;
    case "actions":
      return `<div class="b-actions">${block.elements.map((e) =>
        e.type === "button" ? button(e, where, index) : `<span class="b-unknown">${esc(e.type)}</span>`
      ).join("")}</div>`;
    case "input":
      return inputBlock(block);
    default:
      return `<div class="b-unknown">This sandbox cannot show ${esc(block.type)} blocks yet.</div>`;
  }
}

function renderBlocks(blocks, text, where) {
  if (!blocks || !blocks.length) return `<div class="b-text">${mrkdwn(text || "")}</div>`;
  return blocks.map((block, index) => renderBlock(block, where, index)).join("");
}

// --- messages ------------------------------------------------------------------------------------

function renderMessage(message, channel, extraClass = "") {
  const when = new Date(Number(message.ts) * 1000);
  const who = message.user === ui.state.bot.id ? ui.state.bot.name : name(message.user);
  const where = { channel: channel.id, ts: message.ts };
  const replies = (message.replies || []).map((r) => renderMessage(r, channel, "reply")).join("");
  const thread = message.replies && message.replies.length
    ? `<div class="thread" aria-label="Thread"><div class="thread-count">${message.replies.length} ${message.replies.length === 1 ? "reply" : "replies"}</div>${replies}</div>`
    : "";
  return `<article class="msg ${extraClass}" data-ts="${esc(message.ts)}">
    <div class="avatar">${esc(who.charAt(0))}</div>
    <div class="msg-body">
      <div class="meta"><b>${esc(who)}</b><span class="app-tag">APP</span><time>${clock(when)}</time>${message.edited ? '<span class="edited">(edited)</span>' : ""}</div>
      <div class="blocks">${renderBlocks(message.blocks, message.text, where)}</div>
      ${thread}
    </div>
  </article>`;
}

function renderEphemeral(message) {
  return `<article class="msg ephemeral" data-ts="${esc(message.ts)}">
    <div class="avatar">${esc(ui.state.bot.name.charAt(0))}</div>
    <div class="msg-body">
      <div class="meta"><b>${esc(ui.state.bot.name)}</b><span class="app-tag">APP</span><span class="only-you">Only visible to you</span></div>
      <div class="blocks">${renderBlocks(message.blocks, message.text, null)}</div>
    </div>
  </article>`;
}

function drawChannel(channel) {
  $("pane-title").textContent = `# ${channel.name}`;
  $("pane-note").textContent = "Approval requests from Countersign";
  const items = [
    ...channel.messages.map((m) => ({ ts: m.ts, html: () => renderMessage(m, channel) })),
    ...channel.ephemeral.map((m) => ({ ts: m.ts, html: () => renderEphemeral(m) })),
  ].sort((a, b) => Number(a.ts) - Number(b.ts));
  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  box.innerHTML = items.length
    ? items.map((item) => item.html()).join("")
    : `<div class="empty-pane">No messages yet. Submit the demo proposals, or propose something with the agent API.</div>`;
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function drawHome() {
  $("pane-title").textContent = "Countersign";
  $("pane-note").textContent = "App Home";
  const home = ui.state.home;
  $("messages").innerHTML = home
    ? `<div class="home">${renderBlocks(home.blocks, "", { view: home.id })}</div>`
    : `<div class="empty-pane">Countersign has not published a Home tab for ${esc(name(ui.me))}.${ui.homeStatus === 404 ? " It does not handle the app_home_opened event yet." : ""}</div>`;
}

// --- modals and confirm dialogs ------------------------------------------------------------------

function drawModal() {
  if (ui.confirming) return;
  const views = ui.state.views;
  const top = views[views.length - 1];
  const key = top ? `${top.id}:${top.view.hash}:${JSON.stringify(ui.modalErrors)}` : "";
  if (key === ui.drawn.modal) return;
  ui.drawn.modal = key;
  const overlay = $("overlay");
  if (!top) {
    overlay.hidden = true;
    overlay.innerHTML = "";
    return;
  }
  const typed = readInputs(overlay);
  const view = top.view;
  overlay.innerHTML = `<div class="dialog modal" role="dialog" aria-modal="true" aria-label="${esc(view.title.text)}">
    <header><h2>${plain(view.title)}</h2><button type="button" class="close" data-modal="cancel" aria-label="Close">\u00d7</button></header>
    <div class="dialog-body">${renderBlocks(view.blocks, "", { view: top.id })}</div>
    <footer>
      <button type="button" class="btn" data-modal="cancel">${plain(view.close || { text: "Cancel" })}</button>
      ${view.submit ? `<button type="button" class="btn btn-primary" data-modal="submit">${plain(view.submit)}</button>` : ""}
    </footer>
  </div>`;
  for (const [blockId, actions] of Object.entries(typed)) {
    for (const [actionId, value] of Object.entries(actions)) {
      const field = overlay.querySelector(`[data-block="${CSS.escape(blockId)}"][data-action="${CSS.escape(actionId)}"]`);
      if (field) field.value = value;
    }
  }
  overlay.hidden = false;
  const first = overlay.querySelector("textarea, input");
  if (first && !overlay.contains(document.activeElement)) first.focus();
}

function readInputs(root) {
  const values = {};
  for (const field of root.querySelectorAll("[data-block][data-action]")) {
    (values[field.dataset.block] ||= {})[field.dataset.action] = field.value;
  }
  return values;
}

function confirmFirst(confirm) {
  ui.confirming = true;
  return new Promise((resolve) => {
    const overlay = $("overlay");
    const style = confirm.style === "danger" ? "btn-danger" : "btn-primary";
    overlay.innerHTML = `<div class="dialog confirm" role="alertdialog" aria-modal="true" aria-label="${esc(confirm.title.text)}">
      <header><h2>${plain(confirm.title)}</h2></header>
      <div class="dialog-body">${textObject(confirm.text)}</div>
      <footer>
        <button type="button" class="btn" data-answer="no">${plain(confirm.deny || { text: "Cancel" })}</button>
        <button type="button" class="btn ${style}" data-answer="yes">${plain(confirm.confirm || { text: "Yes" })}</button>
      </footer>
    </div>`;
    overlay.hidden = false;
    overlay.onclick = (event) => {
      const answer = event.target.closest("[data-answer]");
      if (!answer) return;
      overlay.onclick = null;
      overlay.hidden = true;
      overlay.innerHTML = "";
      ui.confirming = false;
      ui.drawn.modal = null;
      resolve(answer.dataset.answer === "yes");
    };
  });
}

// --- talking to the sandbox ----------------------------------------------------------------------

async function send(path, body, { quiet = false } = {}) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) toast(answer.error || `The sandbox answered HTTP ${response.status}.`);
  else if (answer.status && answer.status !== 200 && !quiet) toast(`Countersign answered HTTP ${answer.status}.`);
  return answer;
}

function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

async function click(index) {
  const { element, where, blockIndex } = ui.buttons[index];
  if (element.confirm && !(await confirmFirst(element.confirm))) return;
  const body = { user: ui.me, block_index: blockIndex, action_id: element.action_id };
  if (where.view) body.view_id = where.view;
  else Object.assign(body, { channel: where.channel, ts: where.ts });
  await send("/sandbox/click", body);
  refresh();
}

async function modalAction(kind) {
  const top = ui.state.views[ui.state.views.length - 1];
  if (!top) return;
  if (kind === "cancel") {
    await send("/sandbox/cancel", { user: ui.me, view_id: top.id });
  } else {
    const answer = await send("/sandbox/submit", { user: ui.me, view_id: top.id, values: readInputs($("overlay")) });
    ui.modalErrors = answer.errors || {};
    ui.drawn.modal = null;
  }
  if (kind === "cancel") ui.modalErrors = {};
  refresh();
}

// --- the whole page ------------------------------------------------------------------------------

function drawSidebar() {
  const state = ui.state;
  const who = $("whoami");
  if (who.options.length !== state.people.length) {
    who.innerHTML = state.people.map((p) => `<option value="${esc(p.id)}">${esc(p.name)}</option>`).join("");
  }
  who.value = ui.me;
  const person = state.people.find((p) => p.id === ui.me);
  $("about").textContent = person ? person.about : "";
  $("channels").innerHTML = state.channels.map((c) => {
    const waiting = c.messages.filter((m) => m.blocks.some((b) => b.type === "actions")).length;
    const badge = waiting ? `<span class="badge" title="waiting for a decision">${waiting}</span>` : "";
    return `<li><button type="button" class="nav-item${ui.pane === c.id ? " active" : ""}" data-pane="${esc(c.id)}"># ${esc(c.name)}${badge}</button></li>`;
  }).join("");
  document.querySelector('[data-pane="home"]').classList.toggle("active", ui.pane === "home");
}

const STATUS_CLASS = {
  pending: "wait", executing: "wait", succeeded: "good", denied: "bad", rejected: "bad",
  expired: "bad", failed: "bad", needs_reconciliation: "warn", revision_required: "warn",
};

function drawAgent() {
  const agent = ui.state.agent;
  $("api-url").textContent = agent.api_url;
  $("token-variable").textContent = agent.token_variable;
  $("curl").textContent = agent.curl;
  $("proposals").innerHTML = agent.proposals.length ? agent.proposals.map((p) => `<li>
      <span class="status ${STATUS_CLASS[p.status] || ""}">${esc(p.status.replace("_", " "))}</span>
      <b>${esc(p.title || p.operation)}</b>
      <small>${esc(p.label)} \u00b7 ${esc(p.decision || "")}${p.rule ? ` by rule ${esc(p.rule)}` : ""}</small>
    </li>`).join("") : `<li class="empty">Nothing proposed yet.</li>`;
  $("target").innerHTML = ui.state.target.length ? ui.state.target.map((d) => `<li>
      <b>${esc(d.answer.campaign_id)}</b> ${esc(d.arguments.recipients)} emails to ${esc(d.arguments.segment)}
      ${d.replayed ? "<small>(repeat: answered as before)</small>" : ""}
    </li>`).join("") : `<li class="empty">No campaign sent yet.</li>`;
}

function draw() {
  const state = ui.state;
  if (!state.people.some((p) => p.id === ui.me)) ui.me = state.people[1] ? state.people[1].id : state.people[0].id;
  if (ui.pane !== "home" && !state.channels.some((c) => c.id === ui.pane)) ui.pane = state.channels[0].id;
  drawSidebar();
  drawAgent();
  const channel = state.channels.find((c) => c.id === ui.pane);
  const key = JSON.stringify([ui.me, ui.pane, channel || state.home, ui.homeStatus]);
  if (key !== ui.drawn.pane) {
    ui.drawn.pane = key;
    ui.buttons = [];
    if (channel) drawChannel(channel);
    else drawHome();
  }
  drawModal();
}

async function refresh() {
  try {
    const response = await fetch(`/sandbox/state?user=${encodeURIComponent(ui.me)}`);
    ui.state = await response.json();
    draw();
  } catch (error) {
    toast(`The sandbox is not answering (${error.message}). Is it still running?`);
  }
}

async function choosePane(pane) {
  ui.pane = pane;
  localStorage.setItem("sandbox.pane", pane);
  if (pane === "home") ui.homeStatus = (await send("/sandbox/home", { user: ui.me }, { quiet: true })).status;
  refresh();
}

document.addEventListener("click", (event) => {
  const target = event.target.closest("[data-button], [data-pane], [data-modal], #demo");
  if (!target) return;
  if (target.dataset.button) click(Number(target.dataset.button));
  else if (target.dataset.pane) choosePane(target.dataset.pane);
  else if (target.dataset.modal) modalAction(target.dataset.modal);
  else if (target.id === "demo") send("/sandbox/demo").then(refresh);
});

$("whoami").addEventListener("change", (event) => {
  ui.me = event.target.value;
  localStorage.setItem("sandbox.me", ui.me);
  ui.modalErrors = {};
  ui.drawn = {};
  if (ui.pane === "home") choosePane("home");
  else refresh();
});

refresh();
setInterval(refresh, POLL_MS);
