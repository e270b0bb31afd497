// A partner POST straight to the HTTP app, with a raw body (a form, bytes, a JSON text) and any headers: for
// the upload tests, whose bodies testkit's request() (JSON only) cannot send.
import type { createHttpApp } from "../../transports/http.ts";

export async function rawPost(
  app: ReturnType<typeof createHttpApp>,
  key: string,
  path: string,
  body?: BodyInit | null,
  headers: Record<string, string> = {},
) {
  const res = await app.fetch(
    new Request(`http://mediagate.test/api/v1/partner${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "user-agent": "tests/1.0", ...headers },
      body,
    }),
  );
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}
