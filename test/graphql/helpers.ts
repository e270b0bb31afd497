// What the GraphQL tests share. One of several kernels sharing a Postgres database and a Redis (the
// cross-instance subscription tests): each has its own data directory and role, and reaches the others only
// through the database and Redis. And the steps every product area's GraphQL test takes: a suite around one
// started test kernel, a partner's requests, a job followed to its end, and a table of refusals with REST's texts.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite, type Test } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import type { JobUpdate } from "../../core/jobs.ts";
import { createKernel, type Kernel } from "../../core/kernel.ts";
import type { PluginDeclaration } from "../../core/plugin.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { redisCounters } from "../../storage/counters.ts";
import { redisPubSub } from "../../storage/pubsub.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { assertProgressRises, followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";

export interface SharedBackends {
  databaseUrl: string;
  redis: string;
  /** Isolates this test's Redis keys from other tests sharing the server. */
  prefix: string;
}

/** Starts a kernel in `role` on the shared database and Redis. */
export async function startSharedInstance(
  backends: SharedBackends,
  role: "all" | "api" | "worker",
  plugins: Parameters<typeof createKernel>[0]["plugins"],
): Promise<Kernel> {
  const { databaseUrl, redis, prefix } = backends;
  const config = loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "mediagate-gql-")),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis,
    ROLE: role,
    LOG_LEVEL: "silent",
    SANDBOX_LATENCY_MS: "0",
  });
  const kernel = await createKernel({
    config,
    plugins,
    blobs: memoryBlobStore(),
    counters: redisCounters({ url: redis, prefix }),
    pubsub: redisPubSub({ url: redis, prefix }),
  });
  await kernel.start();
  return kernel;
}

/** A suite whose tests get `tk`: one kernel of `plugins`, started before the first test with the sandbox
 * providers answering after `latencyMs`, closed after the last. */
export function areaSuite(
  name: string,
  plugins: readonly PluginDeclaration[],
  latencyMs: number,
): Test<{ tk: TestKernel }> {
  const t = suite(name, {} as { tk: TestKernel });
  t.before(async (ctx) => {
    ctx.tk = await createTestKernel({ plugins, start: true, env: { SANDBOX_LATENCY_MS: String(latencyMs) } });
  });
  t.after(async ({ tk }) => {
    await tk.close();
  });
  return t;
}

/** A new partner's GraphQL requests, sent with its key. */
export interface GraphqlPartner {
  key: string;
  /** A request that must answer without errors: its `data`. */
  data(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
  /** A request that must be refused: the first error's text. */
  refusal(query: string, variables?: Record<string, unknown>): Promise<string | undefined>;
}

/** A fresh partner (`options` as for `tk.partner`) and its GraphQL requests. */
export async function graphqlPartner(
  tk: TestKernel,
  options: Parameters<TestKernel["partner"]>[0],
): Promise<GraphqlPartner> {
  const { key } = await tk.partner(options);
  return {
    key,
    data: (query, variables = {}, headers) => graphqlData(tk, query, variables, { key, headers }),
    refusal: (query, variables = {}) => graphqlRefusal(tk, query, variables, { key }),
  };
}

/**
 * Follows job `id` over `jobUpdates` (selecting `fields`, which must include `state terminal progress`) to
 * its terminal update, which must be `complete`, with progress only rising; returns every update.
 */
export async function followToCompletion(
  tk: TestKernel,
  gql: GraphqlPartner,
  id: string,
  fields: string,
): Promise<JobUpdate[]> {
  const updates = await followJobUpdates(tk, id, fields, { key: gql.key });
  assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
  assertProgressRises(updates);
  return updates;
}

/**
 * A mutation of `field` taking `$input` and selecting `selection`; the input's type is the field's name
 * capitalised with "Input!" unless `inputType` says otherwise.
 */
export function mutationOf(
  field: string,
  selection = "job_id",
  inputType = `${field[0]!.toUpperCase()}${field.slice(1)}Input!`,
): string {
  return `mutation($input: ${inputType}) { ${field}(input: $input) { ${selection} } }`;
}

/** One refusal: the request, its variables, and the text it must carry (REST's). */
export type RefusalCase = [query: string, variables: Record<string, unknown>, text: string];

/**
 * The test `title`: a fresh partner (`partner` as for `tk.partner`) sends each case, one after another; each is
 * refused with its text, and none of them costs a credit.
 */
export function refusalTest(
  t: Test<{ tk: TestKernel }>,
  title: string,
  partner: Parameters<TestKernel["partner"]>[0] & { credits: number },
  cases: readonly RefusalCase[],
): void {
  t(title, async ({ tk }) => {
    const gql = await graphqlPartner(tk, partner);
    for (const [query, variables, text] of cases) assert.is(await gql.refusal(query, variables), text, query);
    assert.is((await tk.request("GET", "/credits", { key: gql.key })).body.credits_remaining, partner.credits);
  });
}
