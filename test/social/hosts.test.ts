// The host rules of the three networks, table-driven: what is accepted (with its platform and
// normalized_url) and what is refused with which 400 text, lookalike hosts included.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SOCIAL_ERRORS } from "../../plugins/social/errors.ts";
import { checkSocialLink, HOSTS } from "../../plugins/social/hosts.ts";

const t = suite("social host rules");

const ACCEPTED: Array<[string, string, string]> = [
  ["https://www.facebook.com/watch/?v=123&fbclid=abc", "facebook", "https://www.facebook.com/watch/?v=123"],
  ["https://facebook.com/someone/videos/987/", "facebook", "https://www.facebook.com/someone/videos/987/"],
  [
    "https://m.facebook.com/story.php?story_fbid=5&id=6&mibextid=x",
    "facebook",
    "https://www.facebook.com/story.php?story_fbid=5&id=6",
  ],
  ["https://mbasic.facebook.com/reel/42", "facebook", "https://www.facebook.com/reel/42"],
  ["https://web.facebook.com/reel/42", "facebook", "https://www.facebook.com/reel/42"],
  ["https://fb.watch/aBc123/", "facebook", "https://fb.watch/aBc123/"],
  ["https://fb.com/reel/42", "facebook", "https://www.facebook.com/reel/42"],
  [
    "https://www.facebook.com/ads/library/?id=1234567890123&active_status=all",
    "facebook",
    "https://www.facebook.com/ads/library/?id=1234567890123",
  ],
  ["1234567890123", "facebook", "https://www.facebook.com/ads/library/?id=1234567890123"],
  ["  https://www.instagram.com/p/Cxyz/?igsh=abc#frag  ", "instagram", "https://www.instagram.com/p/Cxyz/"],
  ["instagram.com/reel/Cxyz/", "instagram", "https://www.instagram.com/reel/Cxyz/"],
  ["https://m.instagram.com/p/Cxyz", "instagram", "https://www.instagram.com/p/Cxyz"],
  ["https://instagr.am/p/Cxyz/", "instagram", "https://www.instagram.com/p/Cxyz/"],
  ["http://WWW.INSTAGRAM.COM./p/Cxyz/", "instagram", "https://www.instagram.com/p/Cxyz/"],
  [
    "https://www.tiktok.com/@user/video/7300000000000000000?is_from_webapp=1&sender_device=pc",
    "tiktok",
    "https://www.tiktok.com/@user/video/7300000000000000000",
  ],
  ["https://tiktok.com/@user/video/1", "tiktok", "https://www.tiktok.com/@user/video/1"],
  ["https://m.tiktok.com/v/1.html", "tiktok", "https://www.tiktok.com/v/1.html"],
  ["https://vm.tiktok.com/ZMabc/", "tiktok", "https://vm.tiktok.com/ZMabc/"],
  ["https://vt.tiktok.com/ZSabc/", "tiktok", "https://vt.tiktok.com/ZSabc/"],
  [
    "https://library.tiktok.com/ads/detail/?ad_id=1789&utm=x",
    "tiktok",
    "https://library.tiktok.com/ads/detail/?ad_id=1789",
  ],
  ["https://www.instagram.com:443/p/x/", "instagram", "https://www.instagram.com/p/x/"],
];

const REFUSED: Array<[unknown, string]> = [
  [undefined, SOCIAL_ERRORS.urlMissing],
  ["   ", SOCIAL_ERRORS.urlMissing],
  [["https://www.tiktok.com/@a/video/1"], SOCIAL_ERRORS.urlMissing],
  [`https://www.tiktok.com/${"a".repeat(480)}`, SOCIAL_ERRORS.tooLong],
  ["ftp://www.facebook.com/x", SOCIAL_ERRORS.notHttp],
  ["javascript:alert(1)", SOCIAL_ERRORS.notHttp],
  ["file:///etc/passwd", SOCIAL_ERRORS.notHttp],
  ["https://facebook.com.evil.test/watch?v=1", SOCIAL_ERRORS.unsupportedHost],
  ["https://evilfacebook.com/watch?v=1", SOCIAL_ERRORS.unsupportedHost],
  // Host names that are Object.prototype members (found by the openapi fuzzer: a 500 from a null platform).
  ["__proto__", SOCIAL_ERRORS.unsupportedHost],
  ["https://constructor/x", SOCIAL_ERRORS.unsupportedHost],
  ["toString", SOCIAL_ERRORS.unsupportedHost],
  ["https://www.facebook.co/watch?v=1", SOCIAL_ERRORS.unsupportedHost],
  ["https://instagram.com@evil.test/p/x", SOCIAL_ERRORS.unsupportedHost],
  ["https://user:pw@www.instagram.com/p/x", SOCIAL_ERRORS.unsupportedHost],
  ["https://www.instagram.com:8443/p/x", SOCIAL_ERRORS.unsupportedHost],
  ["https://xn--facebok-y0a.com/x", SOCIAL_ERRORS.unsupportedHost],
  ["https://faceboök.com/x", SOCIAL_ERRORS.unsupportedHost],
  ["https://tiktok.com.evil.test/@a/video/1", SOCIAL_ERRORS.unsupportedHost],
  ["https://vm.tiktok.evil.test/abc", SOCIAL_ERRORS.unsupportedHost],
  ["https://www.youtube.com/watch?v=1", SOCIAL_ERRORS.unsupportedHost],
  ["https://127.0.0.1/x", SOCIAL_ERRORS.unsupportedHost],
  ["https:///nohost", SOCIAL_ERRORS.unsupportedHost],
  ["1234", SOCIAL_ERRORS.unsupportedHost],
];

t("accepted links: platform and normalized_url", () => {
  for (const [url, platform, normalized] of ACCEPTED) {
    const r = checkSocialLink(url);
    assert.ok(r.ok, `${url}: ${!r.ok && r.message}`);
    if (r.ok) assert.equal(r.value, { platform, normalizedUrl: normalized }, url);
  }
});

t("refused links: the spec's 400 texts", () => {
  for (const [url, text] of REFUSED) {
    const r = checkSocialLink(url);
    assert.not.ok(r.ok, String(url));
    if (!r.ok) assert.is(r.message, text, String(url));
  }
});

t("500 characters is the limit, not 499", () => {
  const base = "https://www.tiktok.com/@a/video/";
  assert.ok(checkSocialLink(base + "1".repeat(500 - base.length)).ok);
  assert.not.ok(checkSocialLink(base + "1".repeat(501 - base.length)).ok);
});

t("every host of the table is accepted and normalizes to a host of the table", () => {
  for (const host of Object.keys(HOSTS)) {
    const r = checkSocialLink(`https://${host}/x`);
    assert.ok(r.ok, host);
    if (r.ok) {
      assert.is(r.value.platform, HOSTS[host]!.platform);
      assert.ok(HOSTS[new URL(r.value.normalizedUrl).hostname], r.value.normalizedUrl);
    }
  }
});

t.run();
