// A typed REST client of the partner API, as a partner would write one: the types are generated from the
// served OpenAPI document (`openapi.d.ts`, by openapi-typescript from schema/openapi.json; `npm run schema`
// regenerates it) and the calls go through openapi-fetch, so a wrong path, field or result property is a
// compile error, not a 400 at run time. Submit an image, follow it to the end, read the file.
import createClient from "openapi-fetch";
import type { paths } from "./openapi.d.ts";

export interface ImageResult {
  generationId: number;
  creditsUsed: number;
  imageUrl: string;
  /** The statuses seen while waiting, in order (`pending` ... `success`). */
  seen: string[];
  bytes: Uint8Array;
}

export function partnerClient(baseUrl: string, apiKey: string) {
  return createClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${apiKey}`, "user-agent": "acme-partner-client/1.0" },
  });
}

export async function generateImage(
  baseUrl: string,
  apiKey: string,
  prompt: string,
  pollMs = 100,
): Promise<ImageResult> {
  const client = partnerClient(baseUrl, apiKey);
  const submitted = await client.POST("/api/v1/partner/generate-image", {
    body: { prompt, aspect_ratio: "16:9" },
    // Safe to retry after a lost connection: the same key answers the first response, charged once.
    headers: { "Idempotency-Key": `acme-${prompt.length}-${Date.now()}` },
  });
  if (submitted.error)
    throw new Error(`submit refused: ${submitted.error.error} (request ${submitted.error.request_id})`);
  const generationId = submitted.data.generation_ids[0]!;
  const seen: string[] = [];
  for (;;) {
    const status = await client.GET("/api/v1/partner/image-status/{id}", {
      params: { path: { id: String(generationId) } },
    });
    if (status.error) throw new Error(`status refused: ${status.error.error}`);
    if (seen.at(-1) !== status.data.status) seen.push(status.data.status);
    if (status.data.status === "failed") throw new Error(`generation failed: ${status.data.error}`);
    if (status.data.status === "success") {
      const imageUrl = status.data.image_url!;
      const file = await fetch(imageUrl);
      return {
        generationId,
        creditsUsed: submitted.data.credits_used,
        imageUrl,
        seen,
        bytes: new Uint8Array(await file.arrayBuffer()),
      };
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
