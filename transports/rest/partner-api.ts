// The partner API under /api/v1/partner, derived from the registry: each compiled operation (core/operations.ts)
// gets a route; this file only reads the HTTP request and renders the outcome. Nothing here knows a plugin.
import type { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { KERNEL_ERRORS } from "../../core/errors.ts";
import { compileOperations } from "../../core/operations.ts";
import type { CompiledOperation } from "../../core/registry.ts";
import { errorResponse, json, parseJsonObject, queryObject, readBodyCapped } from "./respond.ts";

export const PARTNER_BASE = "/api/v1/partner";
const DEFAULT_MAX_BODY = 1_000_000;

function route(kernel: Kernel, op: CompiledOperation, invoke: ReturnType<typeof compileOperations> extends Map<any, infer I> ? I : never) {
  const decl = op.declaration;
  const hasBody = op.method === "POST" || op.method === "PATCH";
  const maxBody = decl.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const tooLarge = decl.bodyTooLarge ?? KERNEL_ERRORS.bodyTooLarge;
  const onInternal = (err: unknown) => kernel.log.error(`${op.endpoint} failed`, err);

  return async (request: Request, params: Record<string, string>): Promise<Response> => {
    const outcome = await invoke({
      authorization: request.headers.get("authorization"),
      userAgent: request.headers.get("user-agent"),
      params,
      request,
      readInput: async () => (hasBody ? parseJsonObject(await readBodyCapped(request, maxBody, tooLarge)) : queryObject(new URL(request.url))),
    });
    if (!outcome.ok) return errorResponse(outcome.error, onInternal, outcome.headers);
    if ("response" in outcome) {
      for (const [k, v] of Object.entries(outcome.headers)) outcome.response.headers.set(k, v);
      return outcome.response;
    }
    return json(outcome.status, outcome.body, outcome.headers);
  };
}

export function mountPartnerApi(app: H3, kernel: Kernel): void {
  for (const [op, invoke] of compileOperations(kernel)) {
    const handler = route(kernel, op, invoke);
    app.on(op.method as "GET", PARTNER_BASE + op.routerPath, (event) => handler(event.req as Request, (event.context.params ?? {}) as Record<string, string>));
  }
}
