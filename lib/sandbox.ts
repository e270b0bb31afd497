// What every sandbox provider shares (docs/architecture.md "Sandbox providers"): SANDBOX_LATENCY_MS spent in abortable
// steps, and the markers that let anyone reach the failure paths.
import { createHash } from "node:crypto";
import { z } from "zod";
import { appendTopLevelBox, concatBytes, isoBmffBox } from "./formats/index.ts";
import { MP4_UUIDS } from "./media/mp4-metadata.ts";
import { defineConfig, envVar } from "./plugin-config.ts";

// Decoding, sizing and colours of the references a sandbox is given (what makes them show in its output).
export * from "./sandbox-pictures.ts";

/**
 * The variable every sandbox provider reads, declared once: a sandbox plugin puts `config: sandboxConfig` in
 * its definePlugin (or spreads `sandboxConfig.variables` into its own defineConfig) and reads
 * `sandboxConfig.of(host).latencyMs`. Plugins declaring one variable must share its declaration.
 */
export const sandboxConfig = defineConfig({
  latencyMs: envVar(
    "SANDBOX_LATENCY_MS",
    z.string().regex(/^\d+$/, "must be a non-negative integer").transform(Number).default(2000),
    "how long a sandbox provider takes, in milliseconds (2000)",
  ),
});

export const SANDBOX_MARKERS = {
  fail: "[sandbox:fail]",
  unsafe: "[sandbox:unsafe]",
  flaky: "[sandbox:flaky]",
  /** The provider refuses the input as unusable (music: `error_code` input_rejected). */
  reject: "[sandbox:reject]",
  /** The provider never answers in time (music: `error_code` timeout). */
  timeout: "[sandbox:timeout]",
} as const;

/** Whether `text` carries the marker. */
export const hasMarker = (text: string, marker: keyof typeof SANDBOX_MARKERS) => text.includes(SANDBOX_MARKERS[marker]);

/** The text without any marker (what a sandbox draws or speaks). */
export const withoutMarkers = (text: string) => text.replace(/\[sandbox:[a-z]+\]/g, "").trim();

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts; leaves no listener behind. */
export function sandboxSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(timer), reject(signal.reason));
    const timer = setTimeout(() => (signal.removeEventListener("abort", onAbort), resolve()), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const xmlEscape = (s: string) => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

function provenanceXmp(prompt: string, software: string): Uint8Array {
  return new TextEncoder().encode(`<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/" xmp:CreatorTool="${software}"
    Iptc4xmpExt:DigitalSourceType="http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia">
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">${xmlEscape(prompt.slice(0, 1000))}</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>`);
}

/** A C2PA-shaped manifest box payload: purpose, offset, and a JUMBF superbox labelled "c2pa". */
function c2paPayload(prompt: string, software: string): Uint8Array {
  const enc = new TextEncoder();
  const c2paType = Uint8Array.from([
    0x63, 0x32, 0x70, 0x61, 0x00, 0x11, 0x00, 0x10, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71,
  ]);
  const jumd = isoBmffBox("jumd", new Uint8Array([...c2paType, 0x03, ...enc.encode("c2pa"), 0]));
  const claim = isoBmffBox(
    "json",
    enc.encode(
      JSON.stringify({
        claim_generator: software,
        digital_source_type: "trainedAlgorithmicMedia",
        prompt_sha256: createHash("sha256").update(prompt).digest("hex"),
      }),
    ),
  );
  const jumb = isoBmffBox("jumb", concatBytes([jumd, claim]));
  // version/flags (4), purpose "manifest\0", offset to the manifest (8 bytes, 0 = none), then the JUMBF.
  return new Uint8Array([0, 0, 0, 0, ...enc.encode("manifest"), 0, 0, 0, 0, 0, 0, 0, 0, 0, ...jumb]);
}

/**
 * Provenance as generative providers attach it to an MP4: an XMP box and a C2PA-shaped manifest box after the
 * file's own boxes (container tags come from the render's `-metadata`). `strip_metadata` removes all of it.
 */
export function withSandboxProvenance(mp4: Uint8Array, prompt: string, software: string): Uint8Array {
  let bytes = appendTopLevelBox(mp4, "uuid", provenanceXmp(prompt, software), MP4_UUIDS.xmp);
  bytes = appendTopLevelBox(bytes, "uuid", c2paPayload(prompt, software), MP4_UUIDS.c2pa);
  return bytes;
}
