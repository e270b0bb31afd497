// The partner console at /console: the static files of the repository's console/ folder (a page, its script
// and its style sheet; no build step, no CDN), read once at boot. The console is a client of the public API
// like any partner's code (console/console.js), so this module only serves files: a fixed table of names,
// never a path from the request.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { requestIdOf } from "../http-conventions.ts";
import { json } from "./respond.ts";

const CONSOLE_PATH = "/console";
const DIR = join(import.meta.dirname ?? "transports/rest", "../../console");
const FILES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "console.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

/**
 * Scripts and styles only from this origin; the API and GraphQL only from this origin; media previews from
 * here and from PUBLIC_URL, where media links point (a proxy may give them another origin). No framing: a
 * page holding a key must not be clickjacked.
 */
function policy(publicUrl: string): string {
  const media = `'self' ${new URL(publicUrl).origin}`;
  return `default-src 'self'; script-src 'self'; style-src 'self'; img-src ${media} data:; media-src ${media}; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
}

export function mountConsole(app: H3, kernel: Kernel): void {
  const files = new Map(
    Object.entries(FILES).map(([name, type]) => [name, { body: readFileSync(join(DIR, name)), type }]),
  );
  const headers = (type: string): Record<string, string> => ({
    "content-type": type,
    "content-security-policy": policy(kernel.config.publicUrl),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    // Small files that change with a deploy: revalidate rather than serve a stale script.
    "cache-control": "no-cache",
  });
  const page = () => {
    const file = files.get("index.html")!;
    return new Response(file.body, { headers: headers(file.type) });
  };
  app.get(CONSOLE_PATH, page);
  app.get(`${CONSOLE_PATH}/`, page);
  app.get(`${CONSOLE_PATH}/:file`, (event) => {
    const file = files.get(event.context.params?.file ?? "");
    if (!file) return json(404, { error: KERNEL_ERRORS.notFound, request_id: requestIdOf(event) });
    return new Response(file.body, { headers: headers(file.type) });
  });
}
