// The admin CLI: `npm run cli -- <command>`; the same operations as the admin API, against a running server.
// It is a client of that server, and reads the server's configuration the way the server does (core/config.ts
// loadConfig, so a bad PORT fails here with the same message). The server URL comes from --url, else
// PUBLIC_URL, else http://$HOST:$PORT on this machine; the token from --token, else ADMIN_TOKEN, else the
// token the server saved in DATA_DIR on its first start.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { type Config, loadConfig } from "../core/config.ts";

const USAGE = `mediagate admin CLI

  npm run cli -- partners create --name NAME [--credits N] [--tier api_plus10|standard|custom] [--feature KEY=on|off]...
  npm run cli -- partners get PARTNER_ID
  npm run cli -- partners update PARTNER_ID [--name NAME] [--tier TIER] [--active true|false] [--feature KEY=on|off]...
                                            [--inflight N] [--caption-jobs N] [--rate-limit "POST /generate-video=20"]...
                                            [--custom-rates JSON]
  npm run cli -- credits add PARTNER_ID --amount N --type purchase|adjustment --description TEXT
  npm run cli -- rotate-key PARTNER_ID
  npm run cli -- pauses list
  npm run cli -- pauses set NAME on|off      (e.g. metadata_removal, social_downloads: new work answers 503)

Options: --url URL (default $PUBLIC_URL or http://$HOST:$PORT), --token TOKEN (default $ADMIN_TOKEN or $DATA_DIR/admin-token)`;

class UsageError extends Error {}

function features(values: string[] | undefined): Record<string, boolean> | undefined {
  if (!values?.length) return undefined;
  const out: Record<string, boolean> = {};
  for (const v of values) {
    const m = /^([A-Za-z0-9_]+)=(on|off|true|false)$/.exec(v);
    if (!m) throw new UsageError(`--feature takes KEY=on or KEY=off (got "${v}")`);
    out[m[1]!] = m[2] === "on" || m[2] === "true";
  }
  return out;
}

function integer(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${name} takes an integer (got "${v}")`);
  return Number(v);
}

export function buildRequest(argv: string[]): { method: string; path: string; body?: Record<string, unknown> } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      credits: { type: "string" },
      tier: { type: "string" },
      feature: { type: "string", multiple: true },
      active: { type: "string" },
      inflight: { type: "string" },
      "caption-jobs": { type: "string" },
      "rate-limit": { type: "string", multiple: true },
      "custom-rates": { type: "string" },
      amount: { type: "string" },
      type: { type: "string" },
      description: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      help: { type: "boolean" },
    },
  });
  const [group, action, id] = positionals;
  const need = (v: string | undefined, what: string) => {
    if (!v) throw new UsageError(`missing ${what}`);
    return v;
  };
  if (group === "partners" && action === "create") {
    return {
      method: "POST",
      path: "/partners",
      body: {
        name: need(values.name, "--name"),
        credits: integer("credits", values.credits),
        pricing_tier: values.tier,
        features: features(values.feature),
      },
    };
  }
  if (group === "partners" && action === "get")
    return { method: "GET", path: `/partners/${encodeURIComponent(need(id, "PARTNER_ID"))}` };
  if (group === "partners" && action === "update") {
    const limits: Record<string, unknown> = {};
    if (values.inflight) limits.inflight_jobs = integer("inflight", values.inflight);
    if (values["caption-jobs"]) limits.caption_jobs = integer("caption-jobs", values["caption-jobs"]);
    if (values["rate-limit"]?.length) {
      const rl: Record<string, number> = {};
      for (const v of values["rate-limit"]) {
        const at = v.lastIndexOf("=");
        if (at < 1) throw new UsageError(`--rate-limit takes "METHOD /path=N" (got "${v}")`);
        rl[v.slice(0, at).trim()] = integer("rate-limit", v.slice(at + 1).trim())!;
      }
      limits.rate_limits = rl;
    }
    let customRates: unknown;
    if (values["custom-rates"]) {
      try {
        customRates = JSON.parse(values["custom-rates"]);
      } catch {
        throw new UsageError("--custom-rates takes a JSON object");
      }
    }
    if (values.active !== undefined && !["true", "false"].includes(values.active))
      throw new UsageError("--active takes true or false");
    return {
      method: "PATCH",
      path: `/partners/${encodeURIComponent(need(id, "PARTNER_ID"))}`,
      body: {
        name: values.name,
        pricing_tier: values.tier,
        is_active: values.active === undefined ? undefined : values.active === "true",
        features: features(values.feature),
        limits: Object.keys(limits).length ? limits : undefined,
        custom_rates: customRates,
      },
    };
  }
  if (group === "pauses" && action === "list") return { method: "GET", path: "/pauses" };
  if (group === "pauses" && action === "set") {
    const state = positionals[3];
    if (state !== "on" && state !== "off") throw new UsageError("pauses set takes NAME on|off");
    return { method: "PUT", path: `/pauses/${encodeURIComponent(need(id, "NAME"))}`, body: { paused: state === "on" } };
  }
  if (group === "credits" && action === "add") {
    return {
      method: "POST",
      path: `/partners/${encodeURIComponent(need(id, "PARTNER_ID"))}/credits`,
      body: {
        amount: integer("amount", need(values.amount, "--amount")),
        type: need(values.type, "--type"),
        description: need(values.description, "--description"),
      },
    };
  }
  if (group === "rotate-key")
    return { method: "POST", path: `/partners/${encodeURIComponent(need(action, "PARTNER_ID"))}/rotate-key` };
  throw new UsageError(group ? `unknown command: ${positionals.join(" ")}` : "no command given");
}

/** The server on this machine: where it listens, a wildcard address reached through the loopback. */
function localUrl(config: Config): string {
  const host = config.host === "0.0.0.0" || config.host === "::" || config.host === "" ? "127.0.0.1" : config.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
}

/** The server URL and admin token: options first, then the configuration the server itself reads. */
export function target(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
): { url: string; token: string } {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { url: { type: "string" }, token: { type: "string" } },
  });
  const config = loadConfig(env);
  // The configuration always has a public URL; when PUBLIC_URL is unset it names localhost, which may
  // resolve to ::1 while the server listens on 127.0.0.1, so the listening address is used instead.
  const url = (values.url as string | undefined) ?? (env.PUBLIC_URL ? config.publicUrl : localUrl(config));
  let token = (values.token as string | undefined) ?? config.adminToken;
  if (!token) {
    const file = join(config.dataDir, "admin-token");
    if (existsSync(file)) token = readFileSync(file, "utf8").trim();
  }
  if (!token)
    throw new UsageError("no admin token: pass --token, set ADMIN_TOKEN, or run next to the server's DATA_DIR");
  return { url: url.replace(/(?<!\/)\/+$/, ""), token };
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.length === 0) {
    console.log(USAGE);
    return argv.length === 0 ? 1 : 0;
  }
  try {
    const req = buildRequest(argv);
    const { url, token } = target(argv);
    const res = await fetch(`${url}/api/v1/admin${req.path}`, {
      method: req.method,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "user-agent": "mediagate-cli/0.1",
      },
      body: req.body ? JSON.stringify(req.body) : undefined,
    });
    const text = await res.text();
    console.log(text.trim().startsWith("{") ? JSON.stringify(JSON.parse(text), null, 2) : text);
    return res.ok ? 0 : 1;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`error: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    console.error(`error: ${(err as Error).message}`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("cli/admin.ts")) {
  process.exit(await main(process.argv.slice(2)));
}
