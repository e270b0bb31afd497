// Inputs disguised as media, for the media and security tests: manifests, lists, subtitles and XML that name a
// local file, each meant to be uploaded as "up.mp3", "clip.mp4" or "frame.png". The local file they name is a
// real, readable AAC track (so a tool that followed the reference would really read it) carrying a marker.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MediaEngine } from "../../lib/media/index.ts";

export const SECRET_MARKER = "MEDIAGATE-LOCAL-SECRET-7f3c9a";

const enc = (s: string) => new TextEncoder().encode(s);

/** Files in a private temp dir that no request may ever read: secret.m4a (audio), secret.txt, secret.png. */
export async function secretFiles(
  engine: MediaEngine,
): Promise<{ dir: string; m4a: Uint8Array; marker: Uint8Array; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "mediagate-secret-"));
  const out = await engine.run(
    [
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=1234:sample_rate=44100:duration=3",
      "-c:a",
      "aac",
      "-metadata",
      `title=${SECRET_MARKER}`,
      "-f",
      "mp4",
      "secret.m4a",
    ],
    { outputs: ["secret.m4a"] },
  );
  const m4a = out["secret.m4a"]!;
  await writeFile(join(dir, "secret.m4a"), m4a);
  await writeFile(join(dir, "secret.mp4"), m4a);
  await writeFile(join(dir, "secret.txt"), `${SECRET_MARKER}\n`);
  return { dir, m4a, marker: enc(SECRET_MARKER), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Each disguise by name; every one points at the files secretFiles wrote into `dir`. */
export function disguisedInputs(dir: string): Record<string, Uint8Array> {
  const m4a = `${dir}/secret.m4a`;
  const dash = `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" type="static" mediaPresentationDuration="PT3S" minBufferTime="PT1S">
 <Period>
  <AdaptationSet mimeType="audio/mp4">
   <Representation id="a" bandwidth="128000">
    <BaseURL>file:${m4a}</BaseURL>
   </Representation>
  </AdaptationSet>
 </Period>
</MPD>
`;
  const hls = `#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:3
#EXT-X-MEDIA-SEQUENCE:0
#EXTINF:3.0,
file:${m4a}
#EXT-X-ENDLIST
`;
  const id3 = new Uint8Array([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 10, ...new Uint8Array(10)]);
  return {
    dash: enc(dash),
    "dash-bom": enc(`\uFEFF  \n${dash}`),
    hls: enc(hls),
    "hls-bom": enc(`\uFEFF\r\n${hls}`),
    "hls-master": enc(`#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=128000\nfile:${dir}/playlist.m3u8\n`),
    ffconcat: enc(`ffconcat version 1.0\nfile 'file:${m4a}'\nfile '${dir}/secret.mp4'\n`),
    concat: enc(`file '${m4a}'\n`),
    "concat-protocol": enc(`concat:${m4a}|${dir}/secret.mp4`),
    ass: enc(`[Script Info]
ScriptType: v4.00+
; \\include ${dir}/secret.txt
[V4+ Styles]
Format: Name, Fontname, Fontsize
Style: Default,${dir}/secret.txt,20
[Events]
Format: Layer, Start, End, Style, Text
Dialogue: 0,0:00:00.00,0:00:03.00,Default,{\\fn${dir}/secret.txt}<include src="file:${dir}/secret.txt"/>
`),
    srt: enc(`1
00:00:00,000 --> 00:00:03,000
<include src="file://${dir}/secret.txt"/> {\\include ${dir}/secret.txt}
`),
    svg: enc(`<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64">
 <image xlink:href="file://${dir}/secret.png" width="64" height="64"/>
 <text x="0" y="20"><tref xlink:href="file://${dir}/secret.txt#x"/></text>
</svg>
`),
    xml: enc(`<?xml version="1.0"?>
<!DOCTYPE data [<!ENTITY secret SYSTEM "file://${dir}/secret.txt">]>
<data>&secret;</data>
`),
    webvtt: enc(`WEBVTT\n\nNOTE file:${dir}/secret.txt\n\n00:00.000 --> 00:03.000\nhello\n`),
    // An ID3 tag in front of a manifest: sniffed as MP3 and opened with the MP3 demuxer, never as DASH.
    "id3-dash": new Uint8Array([...id3, ...enc(dash)]),
  };
}
