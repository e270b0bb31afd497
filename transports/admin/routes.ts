// The admin API (docs/operations.md "Admin API and CLI"): operators create partners, change tiers, switches and limits, add
// credits and rotate keys. Bearer $ADMIN_TOKEN; a missing or wrong token is a 401, and past a few a minute
// from one address a 429 (door.ts).
import { H3 } from "h3";
import { z } from "zod";
import type { Partner } from "../../core/accounts.ts";
import { screenInput } from "../../core/hostile-input.ts";
import type { Kernel } from "../../core/kernel.ts";
import { addCredits } from "../../core/ledger.ts";
import { isPaused, setPaused } from "../../core/pauses.ts";
import type { Registry } from "../../core/registry.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { validate } from "../../lib/standard-schema.ts";
import { formatTimestamp } from "../../lib/time.ts";
import { requestIdOf } from "../http-conventions.ts";
import type { AdminRouteDoc } from "../rest/openapi.ts";
import { errorResponse, json, readJsonBody } from "../rest/respond.ts";
import { type AdminDoor, adminDoor } from "./door.ts";

export const ADMIN_BASE = "/api/v1/admin";
/** What a 401 of the admin API names (a partner API 401 names the partner realm). */
const ADMIN_CHALLENGE = { "www-authenticate": 'Bearer realm="admin API"' };

const tier = z.enum(["api_plus10", "standard", "custom"], {
  error: "pricing_tier must be api_plus10, standard or custom",
});
const name = z
  .string({ error: "name is required" })
  .trim()
  .min(1, { error: "name is required" })
  .max(200, { error: "name is too long" });
const positiveInt = (field: string) =>
  z
    .number({ error: `${field} must be a positive integer` })
    .int({ error: `${field} must be a positive integer` })
    .min(1, { error: `${field} must be a positive integer` });

function featuresSchema(known: ReadonlySet<string>) {
  return z
    .record(z.string(), z.boolean({ error: "features values must be true or false" }), {
      error: "features must be an object of switches",
    })
    .superRefine((value, ctx) => {
      for (const key of Object.keys(value)) {
        if (!known.has(key)) ctx.addIssue({ code: "custom", message: `Unknown feature switch: ${key}` });
      }
    });
}

const limitsSchema = (known: ReadonlyMap<string, unknown>) =>
  z.strictObject(
    {
      inflight_jobs: positiveInt("limits.inflight_jobs").optional(),
      caption_jobs: positiveInt("limits.caption_jobs").optional(),
      rate_limits: z
        .record(z.string(), positiveInt("limits.rate_limits values"), { error: "limits.rate_limits must be an object" })
        .superRefine((value, ctx) => {
          for (const key of Object.keys(value)) {
            if (!known.has(key)) ctx.addIssue({ code: "custom", message: `Unknown rate limit: ${key}` });
          }
        })
        .optional(),
    },
    { error: "limits must be an object holding inflight_jobs, caption_jobs or rate_limits" },
  );

const customRates = z.record(z.string(), z.unknown(), { error: "custom_rates must be an object" });

function partnerView(p: Partner) {
  return {
    partner_id: p.id,
    name: p.name,
    api_key_prefix: p.apiKeyPrefix,
    pricing_tier: p.pricingTier,
    credits_remaining: p.creditsRemaining,
    is_active: p.isActive,
    features: p.features,
    limits: p.limits,
    custom_rates: p.customRates,
    created_at: formatTimestamp(p.createdAt),
    last_active: formatTimestamp(p.lastActive),
  };
}

export { tokenMatches } from "./door.ts";

/**
 * The admin route table alone, for schema/admin-openapi.json without a running kernel: the routes are mounted
 * on a throwaway app with only the registry (their schemas read it); no handler ever runs.
 */
export function adminRouteDocs(registry: Registry): AdminRouteDoc[] {
  return mountAdminApi(new H3(), registry, "", () => {
    throw new Error("the admin route table alone serves no request");
  });
}

/** What the admin handlers use besides the registry, reached when a request comes (never for the route table alone). */
export type AdminServices = Pick<Kernel, "accounts" | "database" | "limiter" | "log">;

/**
 * An admin body that refuses a field it does not know (400 naming it) instead of dropping it: an operator who
 * sent `limits` when creating a partner was told 201 and got none of them (limits are set with PATCH).
 */
function strictBody<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== "unrecognized_keys") return undefined;
      // The first few only: a body of a million made-up keys does not get them all back.
      const named =
        issue.keys
          .slice(0, 5)
          .map((k) => JSON.stringify(k))
          .join(", ") + (issue.keys.length > 5 ? ` and ${issue.keys.length - 5} more` : "");
      return `unknown field${issue.keys.length > 1 ? "s" : ""} ${named} (this request takes: ${known})`;
    },
  });
}

/**
 * Mounts the admin API; returns its route table, which documents it (schema/admin-openapi.json). The door
 * defaults to one of its own on the kernel's limiter.
 */
export function mountAdminApi(
  app: H3,
  registry: Registry,
  adminToken: string,
  services: () => AdminServices,
  door?: AdminDoor,
): AdminRouteDoc[] {
  const doorOf = () => (door ??= adminDoor(adminToken, services().limiter, services().log));
  const routes: AdminRouteDoc[] = [];
  const createSchema = strictBody({
    name,
    credits: z
      .number({ error: "credits must be a non-negative integer" })
      .int({ error: "credits must be a non-negative integer" })
      .min(0, { error: "credits must be a non-negative integer" })
      .optional(),
    pricing_tier: tier.optional(),
    features: featuresSchema(registry.features).optional(),
  });
  const patchSchema = strictBody({
    name: name.optional(),
    pricing_tier: tier.optional(),
    is_active: z.boolean({ error: "is_active must be true or false" }).optional(),
    features: featuresSchema(registry.features).optional(),
    limits: limitsSchema(registry.rateLimits).optional(),
    custom_rates: customRates.optional(),
  });
  const creditsSchema = strictBody({
    amount: z
      .number({ error: "amount must be a non-zero integer" })
      .int({ error: "amount must be a non-zero integer" })
      .refine((n) => n !== 0, { error: "amount must be a non-zero integer" }),
    type: z.enum(["purchase", "adjustment"], { error: "type must be purchase or adjustment" }),
    description: z
      .string({ error: "description is required" })
      .trim()
      .min(1, { error: "description is required" })
      .max(500, { error: "description is too long" }),
  }).refine((b) => b.type !== "purchase" || b.amount > 0, { error: "a purchase must be a positive amount" });

  type Handler = (request: Request, params: Record<string, string>, requestId: string) => Promise<Response>;
  const route = (
    method: string,
    path: string,
    status: number,
    summary: string,
    handle: (body: any, params: Record<string, string>) => Promise<Record<string, unknown>>,
    schema?: z.ZodType,
  ): void => {
    routes.push({ method, path, status, summary, ...(schema ? { body: schema } : {}) });
    const h: Handler = async (request, params, requestId) => {
      try {
        await doorOf().admit(request, ADMIN_CHALLENGE);
        // The partner API's rules for hostile input (core/hostile-input.ts) hold here too: a NUL in a name or a
        // path, or an unpaired surrogate, is a 400, never a database error.
        const hostileParam = screenInput(params);
        if (hostileParam !== null) throw new ApiError(400, hostileParam);
        let body: unknown;
        if (schema) {
          const raw = await readJsonBody(request, 1_000_000, KERNEL_ERRORS.bodyTooLarge);
          const hostile = screenInput(raw);
          if (hostile !== null) throw new ApiError(400, hostile);
          const result = await validate(schema, raw);
          if (!result.ok) throw new ApiError(400, result.message);
          body = result.value;
        }
        return json(status, { request_id: requestId, ...(await handle(body, params)) });
      } catch (err) {
        return errorResponse(
          err,
          (e) => services().log.error(`admin ${method} ${path} failed`, e),
          ADMIN_CHALLENGE,
          requestId,
        );
      }
    };
    app.on(method as any, ADMIN_BASE + path, (event) =>
      h(event.req as Request, (event.context.params ?? {}) as Record<string, string>, requestIdOf(event)),
    );
  };
  const mustFind = (p: Partner | undefined): Partner => {
    if (!p) throw new ApiError(404, "Partner not found");
    return p;
  };

  route(
    "POST",
    "/partners",
    201,
    "Create a partner; the answer shows its API key once",
    async (body: z.infer<typeof createSchema>) => {
      const { partner, apiKey } = await services().accounts.create({
        name: body.name,
        credits: body.credits,
        pricingTier: body.pricing_tier,
        features: body.features,
      });
      return {
        partner_id: partner.id,
        name: partner.name,
        api_key: apiKey,
        api_key_prefix: partner.apiKeyPrefix,
        pricing_tier: partner.pricingTier,
        credits_remaining: partner.creditsRemaining,
      };
    },
    createSchema,
  );

  route(
    "GET",
    "/partners/:partner_id",
    200,
    "A partner: tier, balance, switches, limits, custom rates",
    async (_b, params) => partnerView(mustFind(await services().accounts.get(params.partner_id!))),
  );

  route(
    "PATCH",
    "/partners/:partner_id",
    200,
    "Change a partner's name, tier, activity, switches, limits or custom rates",
    async (body: z.infer<typeof patchSchema>, params) => {
      const p = await services().accounts.update(params.partner_id!, {
        name: body.name,
        pricingTier: body.pricing_tier,
        isActive: body.is_active,
        features: body.features,
        limits: body.limits,
        customRates: body.custom_rates,
      });
      return partnerView(mustFind(p));
    },
    patchSchema,
  );

  route(
    "POST",
    "/partners/:partner_id/credits",
    200,
    "Grant (purchase) or adjust credits",
    async (body: z.infer<typeof creditsSchema>, params) => {
      mustFind(await services().accounts.get(params.partner_id!));
      const balance = await addCredits(
        services().database.kysely,
        params.partner_id!,
        body.amount,
        body.type,
        body.description,
      );
      if (balance === null)
        throw new ApiError(
          400,
          body.amount > 0 ? KERNEL_ERRORS.balanceTooLarge : "The adjustment would make the balance negative",
        );
      await services().accounts.changed(params.partner_id!);
      return { credits_remaining: balance };
    },
    creditsSchema,
  );

  // Service-wide pause switches (core/pauses.ts): only those a registered plugin declares.
  const pauseSchema = strictBody({ paused: z.boolean({ error: "paused must be true or false" }) });
  const knownPause = (name: string) => {
    if (!registry.pauses.has(name)) throw new ApiError(404, `Unknown pause switch: ${name}`);
    return name;
  };
  route("GET", "/pauses", 200, "The service-wide pause switches and their states", async () => {
    const names = [...registry.pauses].sort();
    const states = await Promise.all(names.map((n) => isPaused(services().database.kysely, n)));
    return { pauses: Object.fromEntries(names.map((n, i) => [n, states[i]])) };
  });
  route(
    "PUT",
    "/pauses/:name",
    200,
    "Pause or resume one switch",
    async (body: z.infer<typeof pauseSchema>, params) => {
      const name = knownPause(params.name!);
      await setPaused(services().database.kysely, name, body.paused);
      return { name, paused: body.paused };
    },
    pauseSchema,
  );

  route(
    "POST",
    "/partners/:partner_id/rotate-key",
    200,
    "A new API key for the partner; the old one stops at once",
    async (_b, params) => {
      const key = await services().accounts.rotateKey(params.partner_id!);
      if (!key) throw new ApiError(404, "Partner not found");
      return { api_key: key };
    },
  );
  return routes;
}
