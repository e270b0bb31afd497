// Omni's part of the `captionable.videos` collection (contracts/records.ts): a finished Omni video, single or a
// batch's section, can have captions burned in (POST /captions takes its job id). The clip's spoken record,
// kept on its output (video.ts), travels with it, so the caption job needs no recognition for it.
import { captionableRecords } from "mediagate/plugin";
import { omniVideos } from "./records.ts";

export const captionableOmniVideos = captionableRecords("omni", omniVideos, (row, { blobs }) => {
  const out = row.state === "complete" ? row.output : null;
  return {
    job_id: row.job_id,
    kind: "omni",
    state: row.state,
    complete: out !== null,
    duration: out?.duration ?? Number(row.duration),
    width: out?.width ?? 0,
    height: out?.height ?? 0,
    read: async () => (out ? ((await blobs.get(out.video_key)) ?? null) : null),
    spoken: out?.spoken ?? null,
  };
});
