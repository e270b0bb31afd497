// The host rules of the three networks: ONE table of every host a link may name, and the parsing and
// normalization derived from it, shared by the social downloader (every host of the table) and ad analysis
// (the hosts the spec's POST /analyze names, `analyze: true`). Hosts are matched exactly (lowercased, a
// trailing dot dropped), never by suffix or substring, so `facebook.com.evil.test`, `evilfacebook.com` and an
// IDN lookalike are simply not in the table. A refusal is a reason; each endpoint words its own 400.
//
// Choices where the spec is silent, written down here:
// - A link without a scheme (`instagram.com/p/...`, as partners paste them) is read as https; `http:` is
//   accepted and normalized to https; any other scheme is "Only http(s) links are supported."
// - A link with userinfo, a non-default port, or a host outside the table is the host 400.
// - `normalized_url`: https, the network's canonical host for apex/mobile/alias hosts (short-link and ad
//   library hosts are kept: only the network knows where a short link leads), the path as sent, only the
//   query parameters that name content (FB `v`, `story_fbid`, `id`, `fbid`; TikTok library `ad_id`),
//   no fragment. A bare numeric ad id becomes the network-A ad library link.
import type { SocialPlatform } from "../contracts/social.ts";

/** The three networks (the social.extract contract names them). */
export type Platform = SocialPlatform;

/** What a host is for: the spec names apex, short-link, mobile hosts and ad library links. */
export type HostRole = "apex" | "www" | "mobile" | "alias" | "short" | "ad-library";

export interface HostRule {
  platform: Platform;
  role: HostRole;
  /** The host `normalized_url` uses; null keeps the host (short links, ad libraries). */
  canonical: string | null;
  /**
   * POST /analyze accepts it (spec part 1 "Ad analysis"): network A (Facebook, the one with an ad library) its
   * apex, `www.` and `m.` hosts; network B (Instagram) apex and `www.`; network C (TikTok) apex, `www.`, `vm.`.
   */
  analyze?: true;
}

const FB = "www.facebook.com";
const IG = "www.instagram.com";
const TT = "www.tiktok.com";

/** Every accepted host. The one place to add or remove one. */
export const HOSTS: Readonly<Record<string, HostRule>> = Object.freeze({
  "facebook.com": { platform: "facebook", role: "apex", canonical: FB, analyze: true },
  "www.facebook.com": { platform: "facebook", role: "www", canonical: FB, analyze: true },
  "m.facebook.com": { platform: "facebook", role: "mobile", canonical: FB, analyze: true },
  "mbasic.facebook.com": { platform: "facebook", role: "mobile", canonical: FB },
  "touch.facebook.com": { platform: "facebook", role: "mobile", canonical: FB },
  "mobile.facebook.com": { platform: "facebook", role: "mobile", canonical: FB },
  "web.facebook.com": { platform: "facebook", role: "alias", canonical: FB },
  "business.facebook.com": { platform: "facebook", role: "alias", canonical: FB },
  // fb.com serves facebook.com's paths; fb.watch and fb.me are short links resolved by the network.
  "fb.com": { platform: "facebook", role: "alias", canonical: FB },
  "www.fb.com": { platform: "facebook", role: "alias", canonical: FB },
  "fb.watch": { platform: "facebook", role: "short", canonical: null },
  "www.fb.watch": { platform: "facebook", role: "short", canonical: "fb.watch" },
  "fb.me": { platform: "facebook", role: "short", canonical: null },

  "instagram.com": { platform: "instagram", role: "apex", canonical: IG, analyze: true },
  "www.instagram.com": { platform: "instagram", role: "www", canonical: IG, analyze: true },
  "m.instagram.com": { platform: "instagram", role: "mobile", canonical: IG },
  // instagr.am serves instagram.com's paths.
  "instagr.am": { platform: "instagram", role: "short", canonical: IG },
  "www.instagr.am": { platform: "instagram", role: "short", canonical: IG },

  "tiktok.com": { platform: "tiktok", role: "apex", canonical: TT, analyze: true },
  "www.tiktok.com": { platform: "tiktok", role: "www", canonical: TT, analyze: true },
  "m.tiktok.com": { platform: "tiktok", role: "mobile", canonical: TT },
  "vm.tiktok.com": { platform: "tiktok", role: "short", canonical: null, analyze: true },
  "vt.tiktok.com": { platform: "tiktok", role: "short", canonical: null },
  "library.tiktok.com": { platform: "tiktok", role: "ad-library", canonical: null },
});

/** Query parameters that name content, per network; every other one (tracking, share ids) is dropped. */
export const CONTENT_PARAMS: Readonly<Record<Platform, readonly string[]>> = {
  facebook: ["v", "story_fbid", "id", "fbid"],
  instagram: [],
  tiktok: ["ad_id"],
};

/** A bare ad id (the network-A ad library's numeric ids) and where it is looked up. */
const AD_ID = /^\d{5,25}$/;
const adLibraryUrl = (id: string) => `https://${FB}/ads/library/?id=${id}`;

export const MAX_URL_LENGTH = 500;

export interface SocialLink {
  platform: Platform;
  normalizedUrl: string;
}

/** Why a link was refused: nothing usable sent, over MAX_URL_LENGTH, a scheme other than http(s), or a host (or userinfo, port) the rules refuse. */
export type LinkRefusal = "missing" | "too_long" | "not_http" | "host";

export type LinkCheck = { ok: true; value: SocialLink } | { ok: false; reason: LinkRefusal };

/** Which hosts of the table an endpoint accepts: all of them (the downloader) or those marked `analyze`. */
export type HostSet = "all" | "analyze";

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;

/** Checks a submitted `url` against the host rules of `hosts`; the reason on refusal. */
export function parseSocialLink(raw: unknown, hosts: HostSet = "all"): LinkCheck {
  if (typeof raw !== "string" || raw.trim() === "") return { ok: false, reason: "missing" };
  const text = raw.trim();
  if (text.length > MAX_URL_LENGTH) return { ok: false, reason: "too_long" };
  if (AD_ID.test(text)) return { ok: true, value: { platform: "facebook", normalizedUrl: adLibraryUrl(text) } };

  let withScheme = text;
  const scheme = SCHEME.exec(text);
  // `host:port/...` also looks like a scheme; a scheme is followed by anything but digits.
  if (scheme && !/^\d/.test(text.slice(scheme[0].length))) {
    const name = scheme[1]!.toLowerCase();
    if (name !== "http" && name !== "https") return { ok: false, reason: "not_http" };
  } else {
    withScheme = `https://${text.replace(/^\/\//, "")}`;
  }

  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { ok: false, reason: "host" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, reason: "not_http" };
  if (url.username || url.password || url.port) return { ok: false, reason: "host" };
  // The WHATWG parser turns a non-ASCII host into punycode; the text as sent must have been ASCII.
  const sentHost = /^[a-z]+:\/\/([^/?#]*)/i.exec(withScheme)?.[1] ?? "";
  if (/[^\x21-\x7e]/.test(sentHost)) return { ok: false, reason: "host" };
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  // Own keys only: a host named "__proto__" or "constructor" must not find Object.prototype's members.
  const rule = Object.hasOwn(HOSTS, host) ? HOSTS[host] : undefined;
  if (!rule || (hosts === "analyze" && !rule.analyze)) return { ok: false, reason: "host" };
  return { ok: true, value: { platform: rule.platform, normalizedUrl: normalize(url, host, rule) } };
}

function normalize(url: URL, host: string, rule: HostRule): string {
  const keep = CONTENT_PARAMS[rule.platform];
  const params = new URLSearchParams();
  for (const [k, v] of url.searchParams) if (keep.includes(k) && !params.has(k)) params.set(k, v);
  const path = url.pathname.replace(/\/{2,}/g, "/") || "/";
  const query = params.toString();
  return `https://${rule.canonical ?? host}${path}${query ? `?${query}` : ""}`;
}
