// Logs and metrics (docs/operations.md "Operations"): an access log line per request (request id, partner id, method,
// route pattern, status, duration; never the key), JSON lines from pino when stderr is not a terminal, and
// /metrics in the Prometheus format with the request counters and the database's figures (jobs by kind and
// state, queue depth, webhook deliveries, credits charged and refunded), on both database backends.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Logger } from "../../core/log.ts";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { serveHealth } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

/** A logger that keeps what it is given. */
function recordingLogger(): Logger & { lines: Array<{ level: string; message: string; details: unknown[] }> } {
  const lines: Array<{ level: string; message: string; details: unknown[] }> = [];
  const at =
    (level: string) =>
    (message: string, ...details: unknown[]) =>
      void lines.push({ level, message, details });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** The value of one sample of the exposition, by metric name and labels. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.lastIndexOf("}"));
    const got = Object.fromEntries([...inside.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

for (const backend of await databaseBackends()) {
  const t = suite(`logs and metrics on ${backend.name}`);
  let tk: TestKernel;
  let log: ReturnType<typeof recordingLogger>;
  t.before.each(async () => {
    log = recordingLogger();
    tk = await createTestKernel({
      plugins: [account, imagesSandbox, images],
      start: true,
      logger: log,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  t.after.each(async () => {
    await tk.close();
  });

  t("an access log line per request: ids, route pattern, status, duration, and never the key", async () => {
    const { id, key } = await tk.partner({ credits: 100 });
    const ok = await tk.request("GET", "/image-status/123456", { key });
    const bad = await tk.request("GET", "/me", { key: "svc_partner_wrong" });
    const access = log.lines.filter((l) => l.message === "request").map((l) => l.details[0] as Record<string, unknown>);
    const first = access.find((a) => a.request_id === ok.headers.get("x-request-id"));
    assert.ok(first, JSON.stringify(access));
    assert.equal(
      { ...first, duration_ms: typeof first!.duration_ms },
      {
        request_id: ok.headers.get("x-request-id"),
        partner_id: id,
        method: "GET",
        route: "/api/v1/partner/image-status/:id",
        status: ok.status,
        duration_ms: "number",
      },
    );
    const traced = await tk.request("GET", "/me", { key, headers: { "x-request-id": "client-trace-42" } });
    const tracedLine = log.lines
      .filter((l) => l.message === "request")
      .map((l) => l.details[0] as Record<string, unknown>)
      .find((a) => a.client_request_id === "client-trace-42");
    assert.ok(tracedLine, "a client's own X-Request-Id is logged beside ours");
    assert.is(tracedLine!.request_id, traced.body.request_id);
    // GraphQL names the partner too: through the direct route, through yoga, and after the route handed a
    // request it had read to yoga.
    const lineOf = (res: { headers: Headers }) =>
      log.lines
        .filter((l) => l.message === "request")
        .map((l) => l.details[0] as Record<string, unknown>)
        .find((a) => a.request_id === res.headers.get("x-request-id"));
    for (const headers of [{}, { accept: "application/graphql-response+json" }] as Array<Record<string, string>>) {
      const line = lineOf(await graphql(tk, "{ me { name } }", undefined, { key, headers }));
      assert.equal([line?.route, line?.partner_id, line?.status], ["/graphql", id, 200], JSON.stringify(headers));
    }
    // `extensions` is yoga's to judge: the route reads the body, then hands yoga a new request with it.
    const handedOn = await tk.fetch(
      new Request("http://mediagate.test/graphql", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${key}`,
          "user-agent": "mediagate-tests/1.0",
        },
        body: JSON.stringify({ query: "{ me { name } }", extensions: {} }),
      }),
    );
    assert.is(handedOn.status, 200);
    assert.equal([lineOf(handedOn)?.partner_id, lineOf(handedOn)?.status], [id, 200]);
    const refused = access.find((a) => a.request_id === bad.headers.get("x-request-id"));
    assert.equal([refused!.partner_id, refused!.status], [null, 401]);
    assert.not.match(JSON.stringify(log.lines), /svc_partner_/, "no key, not even a wrong one");

    const quietLog = recordingLogger();
    const quiet = await createTestKernel({ plugins: [account], logger: quietLog, env: { ACCESS_LOG: "off" } });
    try {
      const p = await quiet.partner();
      assert.is((await quiet.request("GET", "/me", { key: p.key })).status, 200);
      assert.equal(
        quietLog.lines.filter((l) => l.message === "request"),
        [],
        "ACCESS_LOG=off",
      );
    } finally {
      await quiet.close();
    }
  });

  t("/metrics: the admin token on the public port; requests, jobs, queue, credits; open on HEALTH_PORT", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const denied = await tk.fetch(
      new Request("http://mediagate.test/metrics", { headers: { "user-agent": "prom/1" } }),
    );
    assert.is(denied.status, 401);
    const job = await tk.request("POST", "/generate-image", { key, body: { prompt: "a lighthouse at dusk" } });
    assert.is(job.status, 202, JSON.stringify(job.body));
    for (let i = 0; i < 200; i++) {
      const s = await tk.request("GET", `/image-status/${job.body.generation_id}`, { key });
      if (s.body.status !== "pending") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await tk.request("GET", "/me", { key });
    const res = await tk.fetch(
      new Request("http://mediagate.test/metrics", {
        headers: { authorization: `Bearer ${tk.adminToken}`, "user-agent": "prom/1" },
      }),
    );
    assert.is(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/plain/);
    const text = await res.text();
    assert.ok(
      (sample(text, "mediagate_http_requests_total", { method: "GET", route: "/api/v1/partner/me", status: "200" }) ??
        0) >= 1,
      text.slice(0, 2000),
    );
    assert.ok(
      (sample(text, "mediagate_http_requests_total", {
        method: "POST",
        route: "/api/v1/partner/generate-image",
        status: "202",
      }) ?? 0) >= 1,
    );
    const count =
      sample(text, "mediagate_http_request_duration_seconds_count", { method: "GET", route: "/api/v1/partner/me" }) ??
      0;
    assert.ok(count >= 1);
    // The histogram's buckets are cumulative and end with +Inf, which holds every request.
    assert.is(
      sample(text, "mediagate_http_request_duration_seconds_bucket", {
        le: "+Inf",
        method: "GET",
        route: "/api/v1/partner/me",
      }),
      count,
    );
    const buckets = [
      ...text.matchAll(
        /^mediagate_http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/api\/v1\/partner\/me"\} (\d+)/gm,
      ),
    ].map((m) => Number(m[1]));
    assert.equal(
      buckets,
      [...buckets].sort((a, b) => a - b),
    );
    assert.ok(
      (sample(text, "mediagate_http_request_duration_seconds_sum", { method: "GET", route: "/api/v1/partner/me" }) ??
        0) > 0,
    );
    const jobs = [...text.matchAll(/^mediagate_jobs\{plugin="images",kind="([^"]+)",state="([^"]+)"\} (\d+)/gm)];
    assert.ok(jobs.length >= 1 && jobs.reduce((n, m) => n + Number(m[3]), 0) >= 1, "the image job, by kind and state");
    assert.is(sample(text, "mediagate_credits", { type: "charged" }), job.body.credits_used);
    assert.is(sample(text, "mediagate_credits", { type: "refunded" }), 0);
    assert.match(text, /^mediagate_queue_jobs\{queue="[^"]+",state="ready"\} \d+/m);
    assert.match(text, /# TYPE mediagate_webhook_deliveries gauge/);
    assert.not.match(text, /svc_partner_/);

    const health = await serveHealth(tk.kernel, { port: 0, hostname: "127.0.0.1" });
    try {
      const open = await fetch(new URL("/metrics", health.url));
      assert.is(open.status, 200);
      assert.match(await open.text(), /mediagate_http_requests_total/);
    } finally {
      await health.close();
    }
  });

  t.run();
}

const plain = suite("log lines");
plain("JSON lines from pino when stderr is not a terminal: level, time, message, fields, err", () => {
  const script = `
    import { createLogger } from "./core/log.ts";
    const log = createLogger("info");
    log.debug("hidden");
    log.info("request", { request_id: "req_1", status: 200 });
    log.error("a job failed", new Error("disk full"));
    log.warn("odd", 42);
    log.info("flat \\"fields\\"", { note: 'a "quoted" back\\\\slash \\u0001 é ✓ \\ud83d\\ude00', n: 1.5, ok: false, none: null, skipped: undefined });
    const entry = { request_id: "req_2", client_request_id: "trace \\"é\\"", partner_id: null, method: "GET", route: "/api/v1/partner/me", status: 304, duration_ms: 0.7 };
    log.access(entry);
    log.info("request", entry);
    log.access({ ...entry, client_request_id: undefined, partner_id: "prt_1" });
    log.info("request", { ...entry, client_request_id: undefined, partner_id: "prt_1" });
  `;
  const out = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: resolve(import.meta.dirname!, "../.."),
    encoding: "utf8",
  });
  assert.is(out.status, 0, out.stderr);
  const lines = out.stderr
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  assert.equal(
    lines.slice(0, 4).map((l) => [l.level, l.msg]),
    [
      ["info", "request"],
      ["error", "a job failed"],
      ["warn", "odd"],
      ["info", 'flat "fields"'],
    ],
  );
  // The access log's own template (core/log.ts accessLine) writes what info("request", entry) writes.
  const raw = out.stderr.trim().split("\n").slice(4);
  const timeless = (line: string) => line.replace(/"time":"[^"]*"/, '"time":""');
  assert.is(raw.length, 4);
  assert.is(timeless(raw[0]!), timeless(raw[1]!));
  assert.is(timeless(raw[2]!), timeless(raw[3]!));
  assert.equal(
    [lines[4].client_request_id, lines[4].partner_id, lines[6].partner_id, "client_request_id" in lines[6]],
    ['trace "é"', null, "prt_1", false],
  );
  // A line of flat fields is written without pino (core/log.ts flatLine), in pino's key order and escaping.
  assert.equal(Object.keys(lines[3]), ["level", "time", "pid", "note", "n", "ok", "none", "msg"]);
  assert.equal(
    [lines[3].note, lines[3].n, lines[3].ok, lines[3].none],
    ['a "quoted" back\\slash \u0001 é ✓ \ud83d\ude00', 1.5, false, null],
  );
  assert.equal(Object.keys(lines[0]), ["level", "time", "pid", "request_id", "status", "msg"]);
  assert.equal([lines[0].request_id, lines[0].status], ["req_1", 200]);
  assert.is(lines[1].err.message, "disk full");
  assert.match(lines[1].err.stack, /Error: disk full/);
  assert.is(lines[2].details, 42);
  assert.match(lines[0].time, /^\d{4}-\d{2}-\d{2}T/);
});

plain("the access line's numbers and time, written digit by digit, are what String and toISOString make", () => {
  // Durations are rounded to tenths of a millisecond; the rest take the String path (or null when not finite).
  const numbers = [
    0,
    -0,
    0.1,
    0.3,
    0.7,
    1,
    9.9,
    10,
    12.5,
    99.9,
    100,
    1234.5,
    123456.7,
    214748364.7,
    2147483648,
    2.25,
    1e-7,
    1e21,
    -1,
    -0.5,
    Number.NaN,
    Infinity,
  ];
  const script = `
    import { createLogger } from "./core/log.ts";
    const log = createLogger("info");
    for (const n of ${JSON.stringify(numbers.map(String))}.map(Number)) {
      const entry = { request_id: "req_3", partner_id: null, method: "GET", route: "/api/v1/partner/me", status: 200, duration_ms: n };
      log.access(entry);
      log.info("request", entry);
      log.access({ ...entry, status: n, duration_ms: 1 });
      log.info("request", { ...entry, status: n, duration_ms: 1 });
    }
  `;
  const before = Date.now();
  const out = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: resolve(import.meta.dirname!, "../.."),
    encoding: "utf8",
  });
  const after = Date.now();
  assert.is(out.status, 0, out.stderr);
  const raw = out.stderr.trim().split("\n");
  assert.is(raw.length, numbers.length * 4);
  const timeless = (line: string) => line.replace(/"time":"[^"]*"/, '"time":""');
  for (let i = 0; i < raw.length; i += 2) assert.is(timeless(raw[i]!), timeless(raw[i + 1]!));
  const durations = raw.filter((_, i) => i % 4 === 0).map((l) => /"duration_ms":([^,]*),/.exec(l)![1]);
  assert.equal(
    durations,
    numbers.map((n) => (Number.isFinite(n) ? String(n) : "null")),
  );
  for (const line of raw.filter((_, i) => i % 2 === 0)) {
    const time = JSON.parse(line).time as string;
    assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.ok(Date.parse(time) >= before - 1000 && Date.parse(time) <= after, time);
  }
});
plain.run();
