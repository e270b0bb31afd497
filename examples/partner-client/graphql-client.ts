// A typed GraphQL client, as a frontend team would write one: documents are checked against the committed
// schema (schema/schema.graphql) by gql.tada, whose `graphql-env.d.ts` is generated from it (`npm run schema`),
// so each result is typed from the query's own selection. It submits an image, follows the job over the
// `jobUpdates` subscription (graphql-ws over WebSocket), then reads the result.
import { initGraphQLTada, type ResultOf } from "gql.tada";
import { print } from "graphql";
import { createClient } from "graphql-ws";
import WebSocket from "ws";
import type { introspection } from "./graphql-env.d.ts";

/** `ws` sends no User-Agent, which the edge refuses (spec: generic clients get 403 1010); a browser sends its own. */
class AgentWebSocket extends WebSocket {
  constructor(url: string | URL, protocols?: string | string[]) {
    super(url, protocols, { headers: { "user-agent": "acme-frontend/1.0" } });
  }
}

const graphql = initGraphQLTada<{ introspection: introspection; scalars: { JSON: unknown } }>();

export const GenerateImage = graphql(`
  mutation GenerateImage($prompt: String!) {
    generateImage(input: { prompt: $prompt }) { request_id public_id generation_id credits_used }
  }
`);
export const JobUpdates = graphql(`
  subscription JobUpdates($id: String!) {
    jobUpdates(id: $id) { state progress message terminal }
  }
`);
export const ImageStatus = graphql(`
  query ImageStatus($id: String!) {
    imageStatus(id: $id) { status image_url resolution metadata_removed }
  }
`);

async function post<T>(url: string, apiKey: string, document: unknown, variables: Record<string, unknown>): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/json",
      accept: "application/graphql-response+json",
      "user-agent": "acme-frontend/1.0",
    },
    body: JSON.stringify({ query: print(document as Parameters<typeof print>[0]), variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: Array<{ message: string }> };
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join("; "));
  return body.data!;
}

export interface FollowedImage {
  submitted: ResultOf<typeof GenerateImage>["generateImage"];
  updates: Array<NonNullable<ResultOf<typeof JobUpdates>["jobUpdates"]>>;
  status: ResultOf<typeof ImageStatus>["imageStatus"];
}

export async function generateAndFollow(baseUrl: string, apiKey: string, prompt: string): Promise<FollowedImage> {
  const httpUrl = new URL("/graphql", baseUrl).toString();
  const { generateImage } = await post<ResultOf<typeof GenerateImage>>(httpUrl, apiKey, GenerateImage, { prompt });
  const id = generateImage!.public_id!;
  const ws = createClient({
    url: httpUrl.replace(/^http/, "ws"),
    webSocketImpl: AgentWebSocket,
    connectionParams: { authorization: `Bearer ${apiKey}` },
    lazy: true,
    retryAttempts: 0,
  });
  const updates: FollowedImage["updates"] = [];
  try {
    for await (const next of ws.iterate({
      query: print(JobUpdates as Parameters<typeof print>[0]),
      variables: { id },
    })) {
      const update = (next.data as ResultOf<typeof JobUpdates> | undefined)?.jobUpdates;
      if (!update) throw new Error(`subscription: ${JSON.stringify(next.errors)}`);
      updates.push(update);
      if (update.terminal) break;
    }
  } finally {
    await ws.dispose();
  }
  const { imageStatus } = await post<ResultOf<typeof ImageStatus>>(httpUrl, apiKey, ImageStatus, { id });
  return { submitted: generateImage, updates, status: imageStatus };
}
