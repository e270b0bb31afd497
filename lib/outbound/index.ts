// The outbound-URL guard (docs/architecture.md invariant 6): every URL the service fetches or calls goes through it.
//
//   const guard = createOutboundGuard({ allowPrivate: config.allowPrivateUrls });
//   const c = guard.checkUrl(input.image_url);           // validation, before any charge
//   if (!c.ok) return fail("image_url must be a public https URL");
//   const res = await guard.fetch(c.url, { maxBytes: 10_000_000, timeoutMs: 30_000 });
//
// Failures are OutboundError with a `kind`; outboundToApiError (source.ts) maps them to the spec's API errors
// with the caller's texts, and readSource / fetchSource read a partner's file by URL with that mapping.
export { type AddressClass, classifyAddress, isPublicAddress } from "./address.ts";
export {
  type CheckUrlOptions,
  type CheckUrlResult,
  checkUrl,
  DEFAULT_MAX_URL_LENGTH,
  MAX_HOSTNAME_LENGTH,
  MAX_LABEL_LENGTH,
} from "./check.ts";
export { isOutboundError, OutboundError, type OutboundErrorKind } from "./errors.ts";
export {
  createOutboundGuard,
  DEFAULT_MAX_BYTES,
  DEFAULT_TIMEOUT_MS,
  type OutboundGuard,
  type OutboundGuardOptions,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundStream,
  type ResolvedAddress,
  type Resolver,
} from "./fetch.ts";
export {
  type FetchSourceDeps,
  type FetchSourceRules,
  fetchSource,
  type OutboundTexts,
  outboundToApiError,
  type ReadSourceDeps,
  type ReadSourceRules,
  readSource,
  storedSource,
} from "./source.ts";
