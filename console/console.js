// The partner console: a client of the public API and nothing else (REST under /api/v1/partner, GraphQL's
// jobUpdates subscription over SSE for live progress), so it shows exactly what a partner's own code would
// see. The key lives in session storage: it is gone when the tab closes and is never written to a cookie,
// the URL or the page. Every value from the API reaches the page through textContent or a checked URL,
// never as HTML.
const API = "/api/v1/partner";
const KEY = "mediagate.key";

// The accounts' job lists (spec: each product area's list endpoint). A list missing on this server (its
// plugin is not registered) answers 404 and is left out of the page.
const JOB_LISTS = [
  { title: "Videos", path: "/videos" },
  { title: "Images", path: "/images" },
  { title: "Omni videos", path: "/omni/videos" },
  { title: "Omni batches", path: "/omni/script-runner" },
  { title: "Script Runner", path: "/script-runner" },
  { title: "Captions", path: "/captions" },
  { title: "Voiceovers", path: "/voiceovers" },
  { title: "Music", path: "/music" },
  { title: "Social downloads", path: "/social-downloads" },
  { title: "Ad analyses", path: "/analyses" },
];
const ID_FIELDS = ["public_id", "job_id", "batch_id", "download_id", "id"];
// Final states of every area; a job in any other state is followed live.
const DONE = new Set(["success", "completed", "complete", "done"]);
const FAILED = new Set(["failed", "error", "partial", "no_speech", "cancelled", "canceled", "expired"]);
const MEDIA = { image: /\.(png|jpe?g|webp|gif)$/i, video: /\.(mp4|webm|mov)$/i, audio: /\.(mp3|wav|m4a|ogg)$/i };
// Open job streams, ended when the page changes.
const streams = [];

const $ = (id) => document.getElementById(id);
const key = () => sessionStorage.getItem(KEY);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

function toast(text) {
  const t = $("toast");
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), 4000);
}

class ApiFailure extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, init = {}) {
  const res = await fetch(API + path, {
    ...init,
    headers: {
      authorization: `Bearer ${key()}`,
      ...(init.body ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
  });
  const body = await res.json().catch(() => ({}));
  if (res.status === 401 || res.status === 403) {
    signOut(body.error || "Your key was refused.");
    throw new ApiFailure(res.status, body.error);
  }
  if (!res.ok) throw new ApiFailure(res.status, body.error || `HTTP ${res.status}`);
  return body;
}

function table(headings, rows, empty = "Nothing yet.") {
  if (!rows.length) return el("p", { class: "muted" }, empty);
  return el(
    "table",
    {},
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        headings.map((h) => el("th", {}, h)),
      ),
    ),
    el("tbody", {}, rows),
  );
}

function card(label, figure, testId) {
  return el(
    "div",
    { class: "card", "data-testid": testId },
    el("div", { class: "label" }, label),
    el("div", { class: "figure" }, figure),
  );
}

// ---- pages

async function overview(view, offset = 0) {
  const [me, ledger] = await Promise.all([api("/me"), api(`/transactions?limit=20&offset=${offset}`)]);
  const rows = ledger.transactions.map((t) =>
    el(
      "tr",
      {},
      el("td", {}, t.created_at),
      el("td", {}, t.type),
      el("td", { class: `num ${t.amount < 0 ? "minus" : "plus"}` }, t.amount > 0 ? `+${t.amount}` : t.amount),
      el("td", {}, t.description ?? ""),
    ),
  );
  const pager = el(
    "div",
    { class: "pager" },
    el(
      "button",
      {
        class: "quiet",
        type: "button",
        onclick: () => overview(view, Math.max(0, offset - 20)),
        ...(offset === 0 ? { disabled: "" } : {}),
      },
      "Newer",
    ),
    el(
      "span",
      { class: "muted" },
      `${ledger.total ? offset + 1 : 0}–${offset + ledger.transactions.length} of ${ledger.total}`,
    ),
    el(
      "button",
      {
        class: "quiet",
        type: "button",
        onclick: () => overview(view, offset + 20),
        ...(offset + 20 >= ledger.total ? { disabled: "" } : {}),
      },
      "Older",
    ),
  );
  view.replaceChildren(
    el("h2", {}, me.name),
    el(
      "div",
      { class: "cards" },
      card("Credits remaining", me.credits_remaining.toLocaleString("en-US"), "balance"),
      card("Pricing tier", me.pricing_tier, "tier"),
      card("Key", `${me.api_key_prefix}…`, "key-prefix"),
    ),
    el("h3", {}, "Transactions"),
    table(["When (UTC)", "Type", "Credits", "Description"], rows, "No transactions yet."),
    ledger.total > 20 ? pager : null,
  );
}

/** A bar of a share of the widest; sized through the CSSOM, which the page's CSP allows (a style attribute it would not). */
function bar(share) {
  const node = el("div", { class: "bar" });
  node.style.width = `${Math.round(share * 100)}%`;
  return node;
}

async function usage(view) {
  const u = await api("/usage");
  const top = Math.max(1, ...u.per_endpoint.map((e) => e.calls));
  const rows = u.per_endpoint.map((e) =>
    el(
      "tr",
      {},
      el("td", {}, el("code", {}, e.endpoint)),
      el("td", { class: "num" }, e.calls),
      el("td", {}, bar(e.calls / top)),
      el("td", { class: "num" }, e.credits_used),
    ),
  );
  view.replaceChildren(
    el("h2", {}, "Usage"),
    el(
      "div",
      { class: "cards" },
      card("Calls", u.total_calls, "calls"),
      card("Credits used", u.total_credits_used, "credits-used"),
      card("Credits remaining", u.credits_remaining, "usage-balance"),
    ),
    table(["Endpoint", "Calls", "", "Credits"], rows, "No calls yet."),
  );
}

/** The media links of a list entry (its own fields and those one or two levels down, such as music tracks). */
function mediaOf(value, depth = 0, out = []) {
  if (typeof value === "string") {
    let url;
    try {
      url = new URL(value, location.href);
    } catch {
      return out;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return out;
    for (const [kind, pattern] of Object.entries(MEDIA))
      if (pattern.test(url.pathname)) out.push({ kind, url: url.href });
  } else if (value && typeof value === "object" && depth < 3) {
    for (const v of Object.values(value)) mediaOf(v, depth + 1, out);
  }
  return out;
}

function preview({ kind, url }) {
  if (kind === "image") return el("img", { src: url, alt: "result image", loading: "lazy" });
  if (kind === "video") return el("video", { src: url, controls: "", preload: "metadata", muted: "" });
  return el("audio", { src: url, controls: "", preload: "none" });
}

function statusClass(status) {
  return DONE.has(status) ? "status done" : FAILED.has(status) ? "status failed" : "status";
}

function jobRow(item, onEnd) {
  const id = ID_FIELDS.map((f) => item[f]).find((v) => typeof v === "string" && v);
  const status = String(item.status ?? "");
  const state = el("span", { class: statusClass(status), "data-testid": "job-status" }, status);
  const progress = el("progress", {
    max: "100",
    ...(typeof item.progress === "number" ? { value: String(item.progress) } : {}),
  });
  const message = el("div", { class: "muted" }, item.message ?? item.error ?? item.error_message ?? "");
  const media = mediaOf(item).slice(0, 3);
  const row = el(
    "tr",
    { "data-job": id ?? "" },
    el("td", {}, el("code", {}, id ?? "—")),
    el("td", {}, state, message),
    el("td", {}, DONE.has(status) || FAILED.has(status) ? null : progress),
    el("td", {}, item.created_at ?? ""),
    el("td", {}, media.length ? el("div", { class: "previews" }, media.map(preview)) : null),
  );
  if (id && !DONE.has(status) && !FAILED.has(status)) {
    follow(id, (u) => {
      state.textContent = u.state;
      state.className = statusClass(u.state);
      if (typeof u.progress === "number") progress.value = u.progress;
      message.textContent = u.message ?? u.error ?? "";
      if (u.terminal) onEnd();
    });
  }
  return row;
}

async function jobs(view) {
  const sections = await Promise.all(
    JOB_LISTS.map(async (list) => {
      const body = await api(`${list.path}?limit=20`).catch((err) => (err.status === 404 ? null : Promise.reject(err)));
      return body && { list, items: Object.values(body).find(Array.isArray) ?? [] };
    }),
  );
  const present = sections.filter(Boolean);
  const reload = debounce(() => route(), 300);
  view.replaceChildren(
    el("h2", {}, "Jobs"),
    el("p", { class: "muted" }, "Jobs still running update live."),
    ...present.flatMap(({ list, items }) => [
      el("h3", {}, list.title),
      table(
        ["Job", "Status", "Progress", "Created (UTC)", "Result"],
        items.map((item) => jobRow(item, reload)),
        "None yet.",
      ),
    ]),
  );
}

async function webhooks(view) {
  const [settings, list] = await Promise.all([api("/webhook"), api("/webhook/deliveries?limit=50")]);
  const resend = async (button, eventId) => {
    button.disabled = true;
    try {
      await api(`/webhook/deliveries/${encodeURIComponent(eventId)}/resend`, { method: "POST" });
      toast(`Event ${eventId} queued for delivery again.`);
      setTimeout(() => route(), 1500);
    } catch (err) {
      toast(err.message);
      button.disabled = false;
    }
  };
  const when = (s) => (s ? new Date(s * 1000).toISOString().replace("T", " ").slice(0, 19) : "");
  const rows = list.deliveries.map((d) => {
    const button = el(
      "button",
      { class: "quiet", type: "button", ...(d.status === "pending" ? { disabled: "" } : {}) },
      "Resend",
    );
    button.addEventListener("click", () => resend(button, d.event_id));
    return el(
      "tr",
      { "data-event": d.event_id },
      el("td", {}, when(d.created_at)),
      el("td", {}, d.event, el("div", {}, el("code", {}, d.event_id))),
      el("td", {}, el("code", {}, d.url)),
      el(
        "td",
        {},
        el(
          "span",
          { class: statusClass(d.status === "delivered" ? "done" : d.status), "data-testid": "delivery-status" },
          d.status,
        ),
        el("div", { class: "muted" }, d.last_error ?? ""),
      ),
      el("td", { class: "num" }, `${d.attempt}/${d.max_attempts}`),
      el("td", {}, button),
    );
  });
  view.replaceChildren(
    el("h2", {}, "Webhooks"),
    el(
      "p",
      {},
      "Events go to ",
      settings.url
        ? el("code", { "data-testid": "webhook-url" }, settings.url)
        : el("span", { class: "muted" }, "no URL yet (set one with POST /webhook)"),
      ".",
    ),
    el("h3", {}, "Deliveries"),
    table(["Created (UTC)", "Event", "URL", "Status", "Attempts", ""], rows, "No deliveries yet."),
  );
}

const PAGES = { overview, usage, jobs, webhooks };

// ---- live progress: GraphQL over SSE (fetch, so the key travels in the Authorization header)

const SUBSCRIPTION =
  "subscription Follow($id: String!) { jobUpdates(id: $id) { state progress message error terminal } }";

function follow(id, onUpdate) {
  const stop = new AbortController();
  streams.push(stop);
  (async () => {
    const res = await fetch("/graphql", {
      method: "POST",
      signal: stop.signal,
      headers: { authorization: `Bearer ${key()}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ query: SUBSCRIPTION, variables: { id } }),
    });
    if (!res.ok || !res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const data = buffer
          .slice(0, end)
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trim())
          .join("\n");
        buffer = buffer.slice(end + 2);
        if (!data) continue;
        const message = JSON.parse(data);
        if (message.data?.jobUpdates) onUpdate(message.data.jobUpdates);
      }
    }
  })().catch((err) => {
    if (err.name !== "AbortError") console.warn(`job ${id}: stream ended`, String(err));
  });
}

function debounce(fn, ms) {
  let timer;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

// ---- routing and sign-in

async function route() {
  for (const s of streams.splice(0)) s.abort();
  if (!key()) return showSignIn();
  const page = location.hash.replace(/^#\//, "") || "overview";
  const render = PAGES[page] ?? overview;
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  for (const a of document.querySelectorAll("nav a[data-page]"))
    a.classList.toggle("current", a.dataset.page === (PAGES[page] ? page : "overview"));
  const view = $("view");
  view.dataset.page = PAGES[page] ? page : "overview";
  view.setAttribute("aria-busy", "true");
  try {
    await render(view);
  } catch (err) {
    if (key()) view.replaceChildren(el("p", { class: "error" }, err.message));
  } finally {
    view.removeAttribute("aria-busy");
  }
}

function showSignIn(message = "") {
  $("nav").hidden = true;
  $("view").replaceChildren();
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  $("key").focus();
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  for (const s of streams.splice(0)) s.abort();
  showSignIn(message);
}

$("sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY, $("key").value.trim());
  $("key").value = "";
  try {
    await api("/me");
  } catch {
    return; // api() has signed out with the server's reason
  }
  // A changed hash routes through hashchange; the same hash would not fire it.
  if (location.hash !== "#/overview") location.hash = "#/overview";
  else await route();
});
$("sign-out").addEventListener("click", () => signOut(""));
window.addEventListener("hashchange", route);
route();
