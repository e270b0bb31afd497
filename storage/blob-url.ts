// BLOB_URL: where media files live when several hosts share them (issue 20 item 4). One variable, read like
// DATABASE_URL: the credentials ride in the URL and are never printed back.
//
//   s3://ACCESS_KEY:SECRET@bucket[/prefix]?endpoint=https://s3.example.com&region=eu-west-1
//
// - endpoint: the S3-compatible service's base URL (http or https; path-style requests go to
//   <endpoint>/<bucket>/<key>, which every S3-compatible server answers). Default: AWS's regional endpoint.
// - region: the signing region (default us-east-1; "auto" for Cloudflare R2).
// - prefix: keys are stored under it, so one bucket can hold several deployments.
// Unset, blobs stay in DATA_DIR/blobs, which one host alone can read.

export interface S3Location {
  bucket: string;
  /** "" or a prefix ending in "/". */
  prefix: string;
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Why `raw` is not a BLOB_URL, as the end of the sentence "BLOB_URL ..."; undefined when it is one. */
export class BlobUrlError extends Error {}

// S3's bucket naming rules (3-63 characters, lowercase letters, digits, dots and hyphens).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function parseBlobUrl(raw: string): S3Location {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BlobUrlError("must be a URL such as s3://KEY:SECRET@bucket?endpoint=https://s3.example.com");
  }
  if (url.protocol !== "s3:")
    throw new BlobUrlError(`must start with s3:// (got ${url.protocol.replace(/:$/, "")}://)`);
  const bucket = url.hostname;
  if (!BUCKET.test(bucket))
    throw new BlobUrlError("must name a bucket of 3-63 lowercase letters, digits, dots and hyphens");
  let accessKeyId: string;
  let secretAccessKey: string;
  try {
    accessKeyId = decodeURIComponent(url.username);
    secretAccessKey = decodeURIComponent(url.password);
  } catch {
    throw new BlobUrlError("has credentials that are not valid percent-encoding");
  }
  if (!accessKeyId || !secretAccessKey)
    throw new BlobUrlError("must carry the access key and secret: s3://KEY:SECRET@bucket");
  const region = url.searchParams.get("region") || "us-east-1";
  if (!/^[a-z0-9-]{2,32}$/.test(region)) throw new BlobUrlError("has a region that is not a region name");
  const endpointText = url.searchParams.get("endpoint") || `https://s3.${region}.amazonaws.com`;
  let endpoint: URL;
  try {
    endpoint = new URL(endpointText);
  } catch {
    throw new BlobUrlError("has an endpoint that is not a URL");
  }
  if (endpoint.protocol !== "https:" && endpoint.protocol !== "http:")
    throw new BlobUrlError("has an endpoint that is not http or https");
  if (endpoint.username || endpoint.password || endpoint.search || endpoint.hash)
    throw new BlobUrlError("has an endpoint with credentials, a query or a fragment");
  for (const name of url.searchParams.keys()) {
    if (name !== "endpoint" && name !== "region")
      throw new BlobUrlError(`has an unknown parameter "${name}" (endpoint and region are known)`);
  }
  // The URL parser has already resolved literal dot segments; encoded ones and empty ones are refused.
  const path = url.pathname.replace(/^\/+|(?<!\/)\/+$/g, "");
  let segments: string[];
  try {
    segments = path ? path.split("/").map(decodeURIComponent) : [];
  } catch {
    throw new BlobUrlError("has a prefix that is not valid percent-encoding");
  }
  if (segments.some((s) => s === "" || s === "." || s === ".." || /[\u0000-\u001f\\/:]/.test(s)))
    throw new BlobUrlError(
      "has a prefix with an empty, . or .. segment, or an encoded slash, backslash, colon or control character",
    );
  return {
    bucket,
    prefix: segments.length ? `${segments.join("/")}/` : "",
    endpoint: endpoint.href.replace(/(?<!\/)\/+$/, ""),
    region,
    accessKeyId,
    secretAccessKey,
  };
}

/** The location without its credentials, for messages and logs. */
export function describeBlobUrl(location: S3Location): string {
  return `s3://${location.bucket}/${location.prefix} at ${location.endpoint}`;
}
