// The steps every product area's GraphQL test repeats: a request that must succeed, a refusal read for its
// text, and a job's `jobUpdates` subscription followed to its terminal update with progress only rising.
import * as assert from "uvu/assert";
import type { JobUpdate } from "../../core/jobs.ts";
import { type GraphqlRequestOptions, graphql, graphqlSubscription, type TestKernel } from "../../testkit/index.ts";

/** Sends a request that must answer without errors; returns its `data`. */
export async function graphqlData(
  tk: TestKernel,
  query: string,
  variables: Record<string, unknown>,
  opts: GraphqlRequestOptions,
): Promise<any> {
  const res = await graphql(tk, query, variables, opts);
  assert.is(res.errors, undefined, JSON.stringify(res.errors));
  return res.data;
}

/** Sends a request that must be refused; returns the first error's text. */
export async function graphqlRefusal(
  tk: TestKernel,
  query: string,
  variables: Record<string, unknown>,
  opts: GraphqlRequestOptions,
): Promise<string | undefined> {
  const res = await graphql(tk, query, variables, opts);
  return res.errors?.[0]?.message;
}

/** Follows job `id` over `jobUpdates` (selecting `fields`) until its terminal update; returns every update. */
export async function followJobUpdates(
  tk: TestKernel,
  id: string,
  fields: string,
  opts: GraphqlRequestOptions,
): Promise<JobUpdate[]> {
  const updates: JobUpdate[] = [];
  for await (const r of graphqlSubscription(
    tk,
    `subscription($id: String!) { jobUpdates(id: $id) { ${fields} } }`,
    { id },
    opts,
  )) {
    updates.push(r.data.jobUpdates);
    if (r.data.jobUpdates.terminal) break;
  }
  return updates;
}

/** Progress never falls from one update to the next (a missing progress counts as 0). */
export function assertProgressRises(updates: JobUpdate[]): void {
  const progress = updates.map((u) => u.progress ?? 0);
  assert.ok(
    progress.every((p, i) => i === 0 || p >= progress[i - 1]!),
    JSON.stringify(progress),
  );
}
