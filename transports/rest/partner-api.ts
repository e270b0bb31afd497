// The partner API under /api/v1/partner, derived from the registry. Each operation is compiled once into a
// handler running the same pipeline: edge check, authentication, usage count, rate limit, feature switch,
// capped body, validation, handler. Nothing here knows a plugin by name.
import type { H3 } from "h3";
import { authenticate } from "../../core/auth.ts";
import { isEdgeRejected } from "../../core/edge.ts";
import { ApiError, EdgeRejection, KERNEL_ERRORS } from "../../core/errors.ts";
import { requestId as newRequestId } from "../../core/ids.ts";
import type { Kernel } from "../../core/kernel.ts";
import type { OperationContext } from "../../core/plugin.ts";
import { chargeFor } from "../../core/pricing.ts";
import type { CompiledOperation } from "../../core/registry.ts";
import { validate } from "../../core/standard-schema.ts";
import { errorResponse, json, parseJsonObject, queryObject, readBodyCapped } from "./respond.ts";

export const PARTNER_BASE = "/api/v1/partner";
const DEFAULT_MAX_BODY = 1_000_000;

function compile(kernel: Kernel, op: CompiledOperation) {
  const decl = op.declaration;
  const hasBody = op.method === "POST" || op.method === "PATCH";
  const maxBody = decl.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const tooLarge = decl.bodyTooLarge ?? KERNEL_ERRORS.bodyTooLarge;
  const status = decl.status ?? 200;
  const onInternal = (err: unknown) => kernel.log.error(`${op.endpoint} failed`, err);
  const scopedBlobs = kernel.blobs.scoped(op.plugin);
  const plugin = kernel.registry.plugins.find((p) => p.name === op.plugin)!;
  const allowed = new Set([...(plugin.requires ?? []), ...Object.keys(plugin.provides ?? {})]);
  // A plugin reaches only the capabilities it declared, so `requires` stays an honest list.
  const capability = <T,>(name: string): T => {
    if (!allowed.has(name)) throw new Error(`plugin "${op.plugin}" uses capability "${name}" without declaring it in requires`);
    return kernel.capability<T>(name);
  };

  return async (request: Request, params: Record<string, string>): Promise<Response> => {
    let limitHeaders: Record<string, string> = {};
    try {
      if (isEdgeRejected(request.headers.get("user-agent"))) throw new EdgeRejection();
      const partner = await authenticate(kernel.accounts, request.headers.get("authorization"));
      kernel.usage.record(partner.id, op.endpoint);

      const decision = await kernel.limiter.check(partner.id, op.rateLimit, op.rateWindows, partner.limits.rate_limits?.[op.rateLimit]);
      limitHeaders = decision.headers;
      if (!decision.allowed) throw new ApiError(429, KERNEL_ERRORS.rateLimited);

      if (decl.feature && partner.features[decl.feature] === false) {
        throw new ApiError(403, KERNEL_ERRORS.featureDisabled(decl.feature), { feature: decl.feature });
      }

      let raw: Record<string, unknown>;
      if (hasBody) raw = parseJsonObject(await readBodyCapped(request, maxBody, tooLarge));
      else raw = queryObject(new URL(request.url));
      let input: unknown = undefined;
      if (decl.input) {
        const result = await validate(decl.input, raw);
        if (!result.ok) throw new ApiError(400, result.message);
        input = result.value;
      }

      const reqId = newRequestId();
      const ctx: OperationContext<any> = {
        requestId: reqId,
        endpoint: op.endpoint,
        partner,
        input,
        params,
        request,
        config: kernel.config,
        clock: kernel.clock,
        db: kernel.database.kysely,
        costs: kernel.registry.costs,
        account: kernel.accounts,
        priceFor: (price) => chargeFor(price, partner.pricingTier, partner.customRates),
        submitJob: (submission) =>
          kernel.chargeAndCreateJob({ ...submission, partnerId: partner.id, plugin: op.plugin, endpoint: op.endpoint, inflight: decl.inflight === true }),
        capability,
        blobs: scopedBlobs,
        pubsub: kernel.pubsub,
        queue: kernel.queue,
      };
      const result = await decl.handle(ctx);
      if (result instanceof Response) {
        for (const [k, v] of Object.entries(limitHeaders)) result.headers.set(k, v);
        return result;
      }
      return json(status, { request_id: reqId, ...result }, limitHeaders);
    } catch (err) {
      return errorResponse(err, onInternal, limitHeaders);
    }
  };
}

export function mountPartnerApi(app: H3, kernel: Kernel): void {
  for (const op of kernel.registry.operations) {
    const handler = compile(kernel, op);
    app.on(op.method as "GET", PARTNER_BASE + op.routerPath, (event) => handler(event.req as Request, (event.context.params ?? {}) as Record<string, string>));
  }
}
