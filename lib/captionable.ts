// A contribution to the `captionable.videos` collection (contracts/records.ts) from an area's own records: the
// partner's record by job id (another account's answers as a missing one), shown as a video. The area's files
// are in its own blob store, which its jobs wrote them to.
import type { CaptionableVideo, CaptionableVideos } from "../contracts/records.ts";
import type { CapabilityHost } from "../core/plugin.ts";
import type { BlobStore } from "../contracts/blobs.ts";

/** The database a contribution is asked through (the caption job's or request's). */
type Db = Parameters<CaptionableVideos["find"]>[0];

/** What a record's view may read: the area's blobs, the database the lookup used, the host's capabilities. */
export interface CaptionableSources {
  blobs: BlobStore;
  db: Db;
  host: CapabilityHost;
}

export function captionableRecords<R>(
  scope: string,
  records: { find(db: Db, partnerId: string, jobId: string): Promise<R | null | undefined> },
  view: (record: R, sources: CaptionableSources) => CaptionableVideo | Promise<CaptionableVideo>,
): (host: CapabilityHost) => CaptionableVideos {
  return (host) => {
    const blobs = host.blobs.scoped(scope);
    return {
      async find(db, partnerId, jobId) {
        const record = await records.find(db, partnerId, jobId);
        return record ? view(record, { blobs, db, host }) : null;
      },
    };
  };
}
