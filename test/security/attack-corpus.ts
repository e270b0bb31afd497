// The hostile payloads of test/security/attacks.test.ts (issue 14, "Tests and measurements"): GraphQL
// bombs, and manifests (DASH, HLS, ffconcat) disguised as media files. Built once, before the attack's
// /healthz measurement starts, so building a 22 MB document in the test process does not count as the
// server's latency.

/** `{ a0: __typename a1: __typename ... }`: 150,000 aliases are about 2.9 MB, 1,000,000 about 22 MB. */
export function aliasBomb(count: number): string {
  const parts: string[] = new Array(count);
  for (let i = 0; i < count; i++) parts[i] = `a${i}: __typename`;
  return `{ ${parts.join(" ")} }`;
}

/** Introspection nested `depth` levels (`__Type.fields` → `__Field.type` → `__Type` ... is the cycle). */
export function depthBomb(depth: number): string {
  let open = "";
  let close = "";
  for (let i = 0; i < depth; i++) {
    open += i % 2 === 0 ? "fields { " : "type { ";
    close += " }";
  }
  return `{ __schema { types { ${open}name${close} } } }`;
}

/** Fragments that spread each other in a ring of `n`: invalid, but the validator has to find out. */
export function fragmentCycle(n: number): string {
  const frags: string[] = [];
  for (let i = 0; i < n; i++) frags.push(`fragment F${i} on Query { __typename ...F${(i + 1) % n} }`);
  return `query { ...F0 } ${frags.join(" ")}`;
}

/** Fragments that each spread the one below twice (`n` levels): 2^n paths if nothing deduplicates them. */
export function fragmentFanOut(n: number): string {
  const frags = [`fragment F0 on Query { a: __typename b: __typename }`];
  for (let i = 1; i <= n; i++) frags.push(`fragment F${i} on Query { ...F${i - 1} ...F${i - 1} __typename }`);
  return `query { ...F${n} } ${frags.join(" ")}`;
}

/** One field carrying `count` directives (known and unknown ones). */
export function directiveFlood(count: number): string {
  const dirs: string[] = new Array(count);
  for (let i = 0; i < count; i++) dirs[i] = i % 2 === 0 ? "@skip(if: false)" : `@d${i}`;
  return `{ __typename ${dirs.join(" ")} }`;
}

/** A document with a string literal of `bytes` characters. */
export function hugeStringLiteral(bytes: number): string {
  return `{ __type(name: "${"A".repeat(bytes)}") { name } }`;
}

// ---------------------------------------------------------------------------------------------------------
// Manifests. Each points ffmpeg at a file of the server's machine: /etc/passwd (whose bytes must never show
// up anywhere the partner can read), or a real media file on disk (which, opened through the manifest,
// makes a valid-looking upload whose content the partner never sent).

export const PASSWD_MARKERS = ["root:x:0:0", "root:*:0:0", "/bin/bash", "/usr/sbin/nologin", "daemon:x:"];

export function dashManifest(target: string, mimeType = "audio/mpeg"): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
  <Period duration="PT10S">
    <AdaptationSet mimeType="${mimeType}">
      <Representation id="1" bandwidth="128000">
        <BaseURL>${target}</BaseURL>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
`;
}

export function hlsPlaylist(targets: string[]): string {
  return `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXT-X-MEDIA-SEQUENCE:0\n${targets.map((t) => `#EXTINF:5.0,\n${t}\n`).join("")}#EXT-X-ENDLIST\n`;
}

export function ffconcatScript(targets: string[]): string {
  return `ffconcat version 1.0\n${targets.map((t) => `file '${t}'\n`).join("")}`;
}

/** The old concat demuxer's script has no header at all: one `file` line per input. */
export function concatScript(targets: string[]): string {
  return targets.map((t) => `file ${t}\n`).join("");
}

/** Whether any passwd line shows up in `bytes` (as text, or inside a binary file). */
export function containsPasswd(bytes: Uint8Array | string): string | null {
  const text = typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("latin1");
  return PASSWD_MARKERS.find((m) => text.includes(m)) ?? null;
}
