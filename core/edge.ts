// Edge protection (spec Authentication 3): a request without a User-Agent, or with the untouched default of
// a generic HTTP library, is refused with an HTML 403 "error code: 1010" before it reaches the API.
// THE list of refused defaults; matching is on the start of the header, case-insensitive. Command-line
// tools (curl, wget) are not libraries and pass, so the curl examples of README.md work as written.
const GENERIC_USER_AGENTS: readonly string[] = [
  "python-requests/",
  "python-urllib/",
  "python-httpx/",
  "aiohttp/",
  "go-http-client/",
  "node-fetch/",
  "node",
  "axios/",
  "undici",
  "got (",
  "okhttp/",
  "java/",
  "apache-httpclient/",
  "libwww-perl/",
  "ruby",
  "faraday v",
  "guzzlehttp/",
  "dart:io",
  "reqwest/",
];

export function isEdgeRejected(userAgent: string | null | undefined): boolean {
  const ua = userAgent?.trim().toLowerCase();
  if (!ua) return true;
  // "node" is Node's own fetch default (undici sends "node"), matched whole so "nodeapp/1.0" still passes.
  return GENERIC_USER_AGENTS.some((prefix) =>
    prefix === "node" || prefix === "ruby" ? ua === prefix : ua.startsWith(prefix),
  );
}
