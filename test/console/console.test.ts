// The partner console (/console) and the API docs page (/docs) in a real browser: Debian's Chromium, headless,
// driven by playwright-core with the system executable (CHROMIUM_PATH, else /usr/bin/chromium; skipped when
// neither exists: .ci/run installs it). A live server runs every plugin on sandbox providers; the test signs
// in with a real key and checks each page against the REST answers, a job followed live to its end through
// the GraphQL subscription without a reload, the image/video/audio previews really loading, and the resend
// button delivering the same bytes again. Any console error (a CSP violation included) fails the test.
// Screenshots of each page are saved under .test-data/artifacts/console/.
import { existsSync, mkdirSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { plugins } from "../../plugins/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { type HttpServer, serveHttp } from "../../transports/http.ts";
import { freePort } from "../helpers/server.ts";

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (p): p is string => !!p && existsSync(p),
);
const ARTIFACTS = resolve(import.meta.dirname!, "../../.test-data/artifacts/console");

const t = suite("partner console and docs in headless Chromium");
const it = CHROMIUM ? t : t.skip;
let tk: TestKernel;
let server: HttpServer;
let browser: Browser;
let page: Page;
const problems: string[] = [];
const hooks: Array<{ body: string; headers: IncomingMessage["headers"] }> = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    hooks.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
    res.writeHead(200).end("ok");
  });
});
let key = "";

const waitFor = async (check: () => Promise<boolean> | boolean, what: string, ms = 60_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

async function shot(name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function rest(method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(`api/v1/partner${path}`, server.url), {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      "user-agent": "mediagate-console-test/1.0",
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as Record<string, any> };
  } catch {
    throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  }
}

/** Polls a status route until its `status` is one of `ends`. */
async function settled(path: string, ends: string[]): Promise<Record<string, any>> {
  let last: Record<string, any> = {};
  await waitFor(async () => ends.includes((last = (await rest("GET", path)).body).status), `${path} to end`);
  return last;
}

async function open(hash: string): Promise<void> {
  await page.evaluate((h) => (location.hash = h), hash);
  await page.waitForFunction(
    (p) =>
      document.getElementById("view")?.dataset.page === p &&
      !document.getElementById("view")?.hasAttribute("aria-busy"),
    hash.slice(2),
  );
}

t.before(async () => {
  if (!CHROMIUM) return;
  const port = await freePort();
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  tk = await createTestKernel({
    plugins,
    start: true,
    env: { SANDBOX_LATENCY_MS: "2500", PUBLIC_URL: `http://127.0.0.1:${port}`, ALLOW_PRIVATE_URLS: "1" },
  });
  server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port, hostname: "127.0.0.1" });
  key = (
    await tk.partner({
      name: "Console Test Co",
      credits: 5000,
      limits: { rate_limits: { "GET /image-status/<gen_id>": 100_000, "GET /video-status/<job_id>": 100_000 } },
    })
  ).key;
  const { chromium } = await import("playwright-core");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--autoplay-policy=no-user-gesture-required"],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // A refused request is logged by Chromium as a console error too: those are judged by their responses,
  // where only the wrong key's refusal is expected.
  page.on(
    "console",
    (m) =>
      m.type() === "error" && !m.text().startsWith("Failed to load resource") && problems.push(`console: ${m.text()}`),
  );
  page.on(
    "response",
    (r) =>
      r.status() >= 400 &&
      !(r.status() === 401 && r.url().endsWith("/api/v1/partner/me")) &&
      problems.push(`${r.status()} ${r.url()}`),
  );
  page.on("console", (m) => process.env.CONSOLE_DEBUG && console.error("page:", m.type(), m.text()));
  page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
});

t.after(async () => {
  await browser?.close();
  await server?.close();
  await tk?.close();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
});

it("sign-in: a wrong key is refused with the API's reason; the right key opens the balance page", async () => {
  await page.goto(`${server.url}console`);
  await page.waitForSelector("#sign-in:not([hidden])");
  await shot("1-sign-in");
  // Well formed, unknown (a malformed one gets "Missing or invalid Authorization header").
  await page.fill("#key", key.slice(0, -6) + (key.endsWith("000000") ? "111111" : "000000"));
  await page.click("#sign-in button[type=submit]");
  await page.waitForFunction(() => document.getElementById("sign-in-error")?.textContent === "Invalid API key");
  assert.is(await page.evaluate(() => sessionStorage.getItem("mediagate.key")), null, "a refused key is not kept");
  await page.fill("#key", key);
  await page.click("#sign-in button[type=submit]");
  await page.waitForSelector("[data-testid=balance]");
  assert.is(await page.evaluate(() => sessionStorage.getItem("mediagate.key")), key, "kept in session storage");
  assert.is(await page.evaluate(() => document.cookie), "", "never in a cookie");
});

it("balance and transactions match the REST answers", async () => {
  const image = await rest("POST", "/generate-image", { prompt: "a red kite over a beach" });
  assert.is(image.status, 202, JSON.stringify(image.body));
  const voices = (await rest("GET", "/voiceover/voices")).body.voices as Array<{ voice_id: string }>;
  const voice = await rest("POST", "/generate-voiceover", {
    text: "Hello from the console test.",
    voice_id: voices[0]!.voice_id,
  });
  assert.ok(voice.status < 300, JSON.stringify(voice.body));
  await settled(`/image-status/${image.body.public_id}`, ["success", "failed"]);
  await open("#/usage");
  await open("#/overview");
  const me = (await rest("GET", "/me")).body;
  assert.is(await page.textContent("[data-testid=balance] .figure"), me.credits_remaining.toLocaleString("en-US"));
  assert.is(await page.textContent("[data-testid=tier] .figure"), me.pricing_tier);
  const ledger = (await rest("GET", "/transactions")).body;
  const rows = await page.$$eval("#view tbody tr", (trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent)),
  );
  assert.is(rows.length, ledger.transactions.length);
  assert.equal(rows[0]!.slice(1, 3), [ledger.transactions[0].type, String(ledger.transactions[0].amount)]);
  await shot("2-balance");
});

it("usage by endpoint", async () => {
  await open("#/usage");
  const u = (await rest("GET", "/usage")).body;
  const shown = await page.$$eval("#view tbody tr", (trs) =>
    trs.map((tr) => [tr.children[0]!.textContent, tr.children[1]!.textContent]),
  );
  const expected: string[][] = u.per_endpoint.map((e: { endpoint: string; calls: number }) => [
    e.endpoint,
    String(e.calls),
  ]);
  assert.ok(
    expected.some((e) => e[0]!.includes("generate-image")),
    JSON.stringify(expected),
  );
  // The page was read before this REST call counted itself; compare what both saw.
  for (const row of shown)
    assert.ok(
      expected.some((e) => e[0] === row[0]),
      `${row[0]} is an endpoint of /usage`,
    );
  await shot("3-usage");
});

it("jobs: a running video is followed live to its end without a reload; image, video and audio previews load", async () => {
  await rest("POST", "/webhook", { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` });
  const video = await rest("POST", "/generate-video", { prompt: "a slow pan across a harbour at dawn" });
  assert.is(video.status, 202, JSON.stringify(video.body));
  const id = video.body.job_id as string;
  await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
  await open("#/jobs");
  const row = `#view tr[data-job="${id}"]`;
  await page.waitForSelector(row);
  const first = await page.textContent(`${row} [data-testid=job-status]`);
  assert.ok(first !== "complete" && first !== "error", `shown while running (${first})`);
  assert.ok(await page.$(`${row} progress`), "a progress bar while it runs");
  await shot("4-jobs-running");
  await page.waitForFunction(
    (sel) => document.querySelector(`${sel} [data-testid=job-status]`)?.textContent === "complete",
    row,
    { timeout: 90_000 },
  );
  assert.is(
    await page.evaluate(() => (window as unknown as { marker?: number }).marker),
    1,
    "the same page, never reloaded",
  );
  assert.is((await settled(`/video-status/${id}`, ["complete", "error"])).status, "complete");
  // Previews: every image decoded, the video's metadata and the audio's data loaded by the browser's players.
  await page.waitForSelector(`${row} video`);
  await page.$$eval("#view audio", (els) => els.forEach((a) => ((a as HTMLAudioElement).preload = "auto")));
  await page.waitForFunction(
    () => {
      const imgs = [...document.querySelectorAll<HTMLImageElement>("#view img")];
      const vids = [...document.querySelectorAll<HTMLVideoElement>("#view video")];
      const auds = [...document.querySelectorAll<HTMLAudioElement>("#view audio")];
      return (
        imgs.length > 0 &&
        vids.length > 0 &&
        auds.length > 0 &&
        imgs.every((i) => i.complete && i.naturalWidth > 0) &&
        vids.every((v) => v.readyState >= 1 && v.videoWidth > 0) &&
        auds.every((a) => a.readyState >= 1 && a.duration > 0)
      );
    },
    undefined,
    { timeout: 30_000 },
  );
  await shot("5-jobs-done");
});

it("webhooks: deliveries listed; Resend sends the same bytes again and the new record appears", async () => {
  await waitFor(() => hooks.length >= 1, "the video's event delivered");
  await open("#/webhooks");
  const eventId = JSON.parse(hooks[0]!.body).id as string;
  const row = `#view tr[data-event="${eventId}"]`;
  await page.waitForSelector(row);
  assert.is(await page.textContent(`${row} [data-testid=delivery-status]`), "delivered");
  await shot("6-webhooks");
  await page.click(`${row} button`);
  await page.waitForSelector("#toast:not([hidden])");
  await waitFor(() => hooks.length >= 2, "the resend delivered");
  assert.is(hooks[1]!.body, hooks[0]!.body, "byte for byte");
  await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 2, row, { timeout: 30_000 });
  await shot("7-webhooks-resent");
});

it("sign-out forgets the key", async () => {
  await page.click("#sign-out");
  await page.waitForSelector("#sign-in:not([hidden])");
  assert.is(await page.evaluate(() => sessionStorage.getItem("mediagate.key")), null);
});

it("/docs renders the partner API from /openapi.json, offline", async () => {
  const docs = await browser.newPage();
  const external: string[] = [];
  docs.on("request", (r) => !r.url().startsWith(server.url) && !r.url().startsWith("data:") && external.push(r.url()));
  docs.on("pageerror", (e) => problems.push(`docs: ${e.message}`));
  await docs.goto(`${server.url}docs`);
  await docs.waitForSelector("#operations-images-generateImage", { timeout: 30_000 });
  assert.ok(await docs.$("#operations-account-getMe"), "GET /me is listed");
  mkdirSync(ARTIFACTS, { recursive: true });
  await docs.screenshot({ path: join(ARTIFACTS, "8-docs.png") });
  assert.equal(external, [], "nothing loaded from another host");
  await docs.close();
});

it("no console error on any page (a CSP violation would be one)", () => {
  assert.equal(problems, []);
});

t.run();
