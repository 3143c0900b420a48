// The sandbox page: draws the local Slack's state (GET /sandbox/state, polled) the way Slack
// draws Block Kit, and reports clicks and modal submissions to the sandbox server, which sends
// Countersign exactly what Slack would. No build step, no framework.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;
// :name: -> the emoji, for every name Slack knows (emoji.json, made by tests/sandbox/emoji_table.py).
let EMOJI = {};

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

// :name: (and a skin tone after it, :wave::skin-tone-3:) shown as the emoji; unknown names stay.
function emoji(html) {
  return html.replace(/:([a-z0-9_+'-]+):(?::skin-tone-([2-6]):)?/g, (whole, name, tone) => {
    const shown = EMOJI[name];
    if (!shown) return whole;
    const tones = ["", "", "\u{1f3fb}", "\u{1f3fc}", "\u{1f3fd}", "\u{1f3fe}", "\u{1f3ff}"];
    return `<span class="emoji" title=":${name}:">${shown}${tone ? tones[Number(tone)] : ""}</span>`;
  });
}

function plain(obj) {
  if (!obj) return "";
  return obj.emoji === false ? esc(obj.text) : emoji(esc(obj.text));
}

function name(id) {
  return (ui.state && ui.state.names[id]) || id;
}

// --- dates as Slack shows <!date^seconds^format^link|fallback>, in the reader's time zone ----

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
  "September", "October", "November", "December"];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" })[n % 10] || "th";
  return `${n}${suffix}`;
}

function pad(n) {
  return String(n).padStart(2, "0");
}

function clock(when, seconds = false) {
  const hours = when.getHours() % 12 || 12;
  const rest = seconds ? `:${pad(when.getSeconds())}` : "";
  return `${hours}:${pad(when.getMinutes())}${rest} ${when.getHours() < 12 ? "AM" : "PM"}`;
}

// "today", "yesterday" or "tomorrow" when it is one of those, else null.
function nearDay(when) {
  const start = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = Math.round((start(when) - start(new Date())) / 86400000);
  return ({ "-1": "yesterday", 0: "today", 1: "tomorrow" })[days] || null;
}

// "in 29 minutes", "3 hours ago", as Slack's {ago}.
function relative(when) {
  const seconds = Math.round((when.getTime() - Date.now()) / 1000);
  const size = Math.abs(seconds);
  const [count, unit] = size < 60 ? [size, "second"] : size < 3600 ? [Math.round(size / 60), "minute"]
    : size < 86400 ? [Math.round(size / 3600), "hour"] : [Math.round(size / 86400), "day"];
  const words = `${count} ${unit}${count === 1 ? "" : "s"}`;
  return seconds >= 0 ? `in ${words}` : `${words} ago`;
}

function dateText(when, format) {
  const year = when.getFullYear();
  const month = MONTHS[when.getMonth()];
  const day = ordinal(when.getDate());
  const words = {
    date_num: `${year}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}`,
    date_slash: `${pad(when.getMonth() + 1)}/${pad(when.getDate())}/${year}`,
    date: `${month} ${day}, ${year}`,
    date_short: `${month.slice(0, 3)} ${when.getDate()}, ${year}`,
    date_long: `${DAYS[when.getDay()]}, ${month} ${day}, ${year}`,
    time: clock(when),
    time_secs: clock(when, true),
    ago: relative(when),
  };
  const near = nearDay(when);
  words.date_pretty = near || words.date;
  words.date_short_pretty = near || words.date_short;
  words.date_long_pretty = near || words.date_long;
  return format.replace(/\{([a-z_]+)\}/g, (whole, key) => (key in words ? words[key] : whole));
}

function dateToken(target, fallback) {
  const [, seconds, format = "{date_short_pretty} {time}", link] = target.split("^");
  if (!/^\d+$/.test(seconds || "")) return slackText(fallback || target);
  const when = new Date(Number(seconds) * 1000);
  const shown = esc(dateText(when, format));
  const title = esc(when.toString());
  const html = `<time datetime="${esc(when.toISOString())}" title="${title}">${shown}</time>`;
  return link && /^https?:\/\//.test(link)
    ? `<a href="${esc(link)}" target="_blank" rel="noopener">${html}</a>` : html;
}

// <@U123>, <#C123|name>, <!date^…|fallback>, <!here>, <url|label>
function slackToken(token) {
  const bar = token.indexOf("|");
  const [target, label] = bar < 0 ? [token, undefined] : [token.slice(0, bar), token.slice(bar + 1)];
  if (target.startsWith("@")) return `<span class="mention">@${esc(name(target.slice(1)))}</span>`;
  if (target.startsWith("#")) return `<span class="mention">#${esc(label || channelName(target.slice(1)))}</span>`;
  if (target.startsWith("!date^")) return dateToken(target, label);
  if (target.startsWith("!subteam^")) return `<span class="mention">@${esc(label || target.slice(9))}</span>`;
  if (target.startsWith("!")) return `<span class="mention">@${esc(target.slice(1))}</span>`;
  if (/^(https?:\/\/|mailto:)/.test(target)) {
    return `<a href="${esc(target)}" target="_blank" rel="noopener">${emoji(slackText(label || target))}</a>`;
  }
  return slackText(`<${token}>`);
}

function channelName(id) {
  const channel = ui.state && ui.state.channels.find((c) => c.id === id);
  return channel ? channel.name : id;
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
  if (obj.type === "plain_text") return plain(obj);
  return mrkdwn(obj.text || "");  // "mrkdwn"
}

// --- Block Kit -----------------------------------------------------------------------------------

// A button remembers where it is (message or view) so a click can name it to the server.
function button(element, where, blockIndex) {
  const index = ui.buttons.push({ element, where, blockIndex }) - 1;
  const style = element.style ? ` btn-${esc(element.style)}` : "";
  return `<button type="button" class="btn${style}" data-button="${index}">${plain(element.text)}</button>`;
}

function allOptions(element) {
  return [...(element.options || []), ...(element.option_groups || []).flatMap((g) => g.options || [])];
}

function optionText(option) {
  return option.text && option.text.type === "mrkdwn" ? mrkdwn(option.text.text) : plain(option.text);
}

function selectOptions(element, chosen) {
  const one = (o) => `<option value="${esc(o.value)}"${chosen.has(o.value) ? " selected" : ""}>${esc(o.text.text)}</option>`;
  const groups = (element.option_groups || []).map((g) =>
    `<optgroup label="${esc(g.label.text)}">${(g.options || []).map(one).join("")}</optgroup>`).join("");
  return (element.options || []).map(one).join("") + groups;
}

// "2025-05-01T13:30" in the reader's time zone, for <input type="datetime-local">.
function localMinute(seconds) {
  const when = new Date(Number(seconds) * 1000);
  return `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}T${pad(when.getHours())}:${pad(when.getMinutes())}`;
}

// One interactive element: an input of a modal (with `id` for its label), or a control in a
// message, which this page shows but does not send (Countersign's messages hold only buttons).
function field(element, blockId, id, labelId) {
  const data = `data-block="${esc(blockId)}" data-action="${esc(element.action_id || "")}" data-kind="${esc(element.type)}"`;
  const named = `id="${id}" ${data}`;
  const placeholder = element.placeholder ? ` placeholder="${esc(element.placeholder.text)}"` : "";
  const value = (v) => (v === undefined || v === null ? "" : ` value="${esc(v)}"`);
  const choices = (type) => {
    const initial = element.initial_options || (element.initial_option ? [element.initial_option] : []);
    const chosen = new Set(initial.map((o) => o.value));
    return `<div class="choices" role="${type === "radio" ? "radiogroup" : "group"}" aria-labelledby="${labelId}" ${named}>${
      (element.options || []).map((o) => `<label class="choice">
        <input type="${type}" name="${id}" value="${esc(o.value)}"${chosen.has(o.value) ? " checked" : ""}>
        <span>${optionText(o)}${o.description ? `<small>${plain(o.description)}</small>` : ""}</span>
      </label>`).join("")}</div>`;
  };
  switch (element.type) {
    case "plain_text_input": {
      const limits = (element.max_length ? ` maxlength="${Number(element.max_length)}"` : "") +
        (element.min_length ? ` minlength="${Number(element.min_length)}"` : "");
      return element.multiline
        ? `<textarea ${named}${limits}${placeholder} rows="4">${esc(element.initial_value || "")}</textarea>`
        : `<input type="text" ${named}${limits}${placeholder}${value(element.initial_value)}>`;
    }
    case "email_text_input":
      return `<input type="email" ${named}${placeholder}${value(element.initial_value)}>`;
    case "url_text_input":
      return `<input type="url" ${named}${placeholder}${value(element.initial_value)}>`;
    case "number_input": {
      const bounds = (element.min_value !== undefined ? ` min="${esc(element.min_value)}"` : "") +
        (element.max_value !== undefined ? ` max="${esc(element.max_value)}"` : "");
      const step = element.is_decimal_allowed ? "any" : "1";
      return `<input type="number" inputmode="${element.is_decimal_allowed ? "decimal" : "numeric"}" step="${step}" ${named}${bounds}${placeholder}${value(element.initial_value)}>`;
    }
    case "static_select":
    case "multi_static_select": {
      const multiple = element.type === "multi_static_select";
      const initial = element.initial_options || (element.initial_option ? [element.initial_option] : []);
      const chosen = new Set(initial.map((o) => o.value));
      // the placeholder, until something is chosen (as Slack shows it)
      const prompt = multiple || chosen.size ? "" : `<option value="" selected>${esc(element.placeholder ? element.placeholder.text : "Choose an option")}</option>`;
      return `<select ${named}${multiple ? " multiple" : ""}>${prompt}${selectOptions(element, chosen)}</select>`;
    }
    case "checkboxes":
      return choices("checkbox");
    case "radio_buttons":
      return choices("radio");
    case "datepicker":
      return `<input type="date" ${named}${value(element.initial_date)}>`;
    case "timepicker":
      return `<input type="time" ${named}${value(element.initial_time)}>`;
    case "datetimepicker":
      return `<input type="datetime-local" ${named}${element.initial_date_time ? value(localMinute(element.initial_date_time)) : ""}>`;
    default:
      return `<p class="b-unknown">This sandbox cannot show ${esc(element.type)} inputs yet.</p>`;
  }
}

function inputBlock(block) {
  const element = block.element || {};
  const id = `input-${esc(block.block_id)}`;
  const error = ui.modalErrors[block.block_id];
  return `<div class="b-input${error ? " has-error" : ""}">
    <label id="${id}-label" for="${id}">${plain(block.label)}${block.optional ? ' <span class="optional">(optional)</span>' : ""}</label>
    ${field(element, block.block_id, id, `${id}-label`)}
    ${error ? `<p class="error">${esc(error)}</p>` : ""}
    ${block.hint ? `<p class="b-hint">${plain(block.hint)}</p>` : ""}
  </div>`;
}

// A button, an image, or another element shown in a message (the page sends only clicks).
function control(element, where, blockIndex, key) {
  if (element.type === "button") return button(element, where, blockIndex);
  if (element.type === "image") return `<img class="b-image-accessory" src="${esc(element.image_url)}" alt="${esc(element.alt_text || "")}">`;
  return field(element, `b${blockIndex}`, `control-${key}`, "");
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
      const accessory = block.accessory
        ? `<div class="b-accessory">${control(block.accessory, where, index, `${index}-a`)}</div>` : "";
      return `<div class="b-section"><div class="b-section-body">${text}${fields}</div>${accessory}</div>`;
    }
    case "context":
      return `<div class="b-context">${block.elements.map((e) =>
        e.type === "image" ? `<img src="${esc(e.image_url)}" alt="${esc(e.alt_text || "")}" title="${esc(e.alt_text || "")}">` : `<span>${textObject(e)}</span>`
      ).join("")}</div>`;
    case "divider":
      return `<hr class="b-divider">`;
    case "image":
      return `<figure class="b-image">${block.title ? `<figcaption>${plain(block.title)}</figcaption>` : ""}<img src="${esc(block.image_url)}" alt="${esc(block.alt_text || "")}"></figure>`;
    case "actions":
      return `<div class="b-actions">${block.elements.map((e, n) => control(e, where, index, `${index}-${n}`)).join("")}</div>`;
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
  writeInputs(overlay, typed);
  overlay.hidden = false;
  const first = overlay.querySelector("textarea, input, select");
  if (first && !overlay.contains(document.activeElement)) first.focus();
}

// What the person entered, by block and action: text, the chosen option's value, or the chosen
// options' values; a date and time as Unix seconds.
function readInputs(root) {
  const values = {};
  for (const field of root.querySelectorAll(".dialog [data-block][data-action]")) {
    const kind = field.dataset.kind;
    let value = field.value;
    if (kind === "checkboxes") value = [...field.querySelectorAll("input:checked")].map((i) => i.value);
    else if (kind === "radio_buttons") value = (field.querySelector("input:checked") || { value: "" }).value;
    else if (field.multiple) value = [...field.selectedOptions].map((o) => o.value);
    else if (kind === "datetimepicker" && value) value = String(Math.floor(new Date(value).getTime() / 1000));
    (values[field.dataset.block] ||= {})[field.dataset.action] = value;
  }
  return values;
}

// Put back what was entered before the modal was drawn again.
function writeInputs(root, values) {
  for (const [blockId, actions] of Object.entries(values)) {
    for (const [actionId, value] of Object.entries(actions)) {
      const field = root.querySelector(`[data-block="${CSS.escape(blockId)}"][data-action="${CSS.escape(actionId)}"]`);
      if (!field) continue;
      const kind = field.dataset.kind;
      const chosen = new Set([value].flat());
      if (kind === "checkboxes" || kind === "radio_buttons") {
        for (const box of field.querySelectorAll("input")) box.checked = chosen.has(box.value);
      } else if (field.multiple) {
        for (const option of field.options) option.selected = chosen.has(option.value);
      } else if (kind === "datetimepicker") {
        field.value = value ? localMinute(value) : "";
      } else {
        field.value = value;
      }
    }
  }
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
  if (where.view) {
    body.view_id = where.view;
    // a click in a modal carries what was entered so far, as Slack sends the view's state
    const top = ui.state.views[ui.state.views.length - 1];
    if (top && top.id === where.view) body.values = readInputs($("overlay"));
  } else Object.assign(body, { channel: where.channel, ts: where.ts });
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
  superseded: "", open: "wait", taken: "good", handed_back: "warn", resolved: "",
};

// What happened to a proposal, from the agent API's answer now (never from when it was sent).
function proposalNote(p) {
  const rule = p.rule ? ` (rule ${p.rule})` : "";
  const who = p.decided_by ? name(p.decided_by) : "an approver";
  switch (p.status) {
    case "pending":
      if (p.shown_after && new Date(p.shown_after) > new Date()) {
        // held by its rule's batch window: shown with the others when it closes
        return `held to be decided with others; shown ${relative(new Date(p.shown_after))}`;
      }
      return `waits for a decision${p.expires_at ? `; expires ${relative(new Date(p.expires_at))}` : ""}`;
    case "executing":
      return "approved; executing now";
    case "succeeded":
      return p.decision === "auto" ? `ran without asking${rule}` : `approved by ${who}; done`;
    case "failed":
      return p.decision === "auto" ? `ran without asking${rule}, and failed` : `approved by ${who}; it failed`;
    case "denied":
      return `denied by the policy${rule}`;
    case "rejected":
      return `rejected by ${who}`;
    case "expired":
      return "expired: nobody decided in time";
    case "superseded":
      return "replaced by an approver's edit";
    case "needs_reconciliation":
      return "uncertain: a person must say whether it happened";
    case "revision_required":
      return "the facts changed: it must be proposed again";
    default:
      return p.status ? p.status.replace(/_/g, " ") : "asking the agent API…";
  }
}

function escalationNote(e) {
  switch (e.status) {
    case "open":
      return "waits for a person to take it";
    case "taken":
      return `${name(e.owner)} has the conversation: the agent stops replying`;
    case "handed_back":
      return `handed back${e.note ? `: \u201c${e.note}\u201d` : ""}`;
    case "resolved":
      return "resolved";
    default:
      return e.status || "";
  }
}

function badge(status) {
  return `<span class="status ${STATUS_CLASS[status] || ""}">${esc((status || "…").replace(/_/g, " "))}</span>`;
}

function drawAgent() {
  const agent = ui.state.agent;
  $("api-url").textContent = agent.api_url;
  $("token-variable").textContent = agent.token_variable;
  $("curl").textContent = agent.curl;
  const origin = (p) => (["your agent", "an edit"].includes(p.label) ? p.label : "demo");
  const proposals = agent.proposals.map((p) => `<li data-id="${esc(p.id)}">
      ${badge(p.status)} <small class="origin">${esc(origin(p))}</small>
      <b>${esc(p.title || p.operation || p.id)}</b>
      <small>${esc(proposalNote(p))}</small>
    </li>`);
  const escalations = agent.escalations.map((e) => `<li data-id="${esc(e.id)}">
      ${badge(e.status)} <small class="origin">escalation</small>
      <b>${esc(e.goal || e.id)}</b>
      <small>${esc(escalationNote(e))}</small>
    </li>`);
  const html = [...escalations, ...proposals].join("") || `<li class="empty">Nothing proposed yet.</li>`;
  if (html !== ui.drawn.agent) {
    ui.drawn.agent = html;
    $("proposals").innerHTML = html;
  }
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
  const target = event.target.closest("[data-button], [data-pane], [data-modal], [data-scenario], #demo");
  if (!target) return;
  if (target.dataset.button) click(Number(target.dataset.button));
  else if (target.dataset.pane) choosePane(target.dataset.pane);
  else if (target.dataset.modal) modalAction(target.dataset.modal);
  else if (target.dataset.scenario) send(`/sandbox/scenario/${target.dataset.scenario}`).then(refresh);
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

async function start() {
  try {
    EMOJI = await (await fetch("/static/emoji.json")).json();
  } catch (error) {
    toast(`The emoji table did not load (${error.message}): emoji show as :names:.`);
  }
  await refresh();
  setInterval(refresh, POLL_MS);
}

start();
