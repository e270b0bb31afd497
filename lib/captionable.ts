// A contribution to the `captionable.videos` collection (contracts/records.ts) from an area's own records: the
// partner's record by job id (another account's answers as a missing one), shown as a video. The area's files
// are in its own blob store, which its jobs wrote them to.

import type { BlobStore } from "../contracts/blobs.ts";
import type { CapabilityMap, CapabilityName } from "../contracts/index.ts";
import type { CaptionableVideo, CaptionableVideos } from "../contracts/records.ts";

/** What of a plugin's host a contribution uses (the kernel's CapabilityHost is one): its blobs and capabilities. */
export interface CaptionableHost {
  blobs: BlobStore;
  capability<K extends CapabilityName>(name: K): CapabilityMap[K];
}

/** The database a contribution is asked through (the caption job's or request's). */
type Db = Parameters<CaptionableVideos["find"]>[0];

/** What a record's view may read: the area's blobs, the database the lookup used, the host's capabilities. */
export interface CaptionableSources {
  blobs: BlobStore;
  db: Db;
  host: CaptionableHost;
}

export function captionableRecords<R>(
  scope: string,
  records: { find(db: Db, partnerId: string, jobId: string): Promise<R | null | undefined> },
  view: (record: R, sources: CaptionableSources) => CaptionableVideo | Promise<CaptionableVideo>,
): (host: CaptionableHost) => CaptionableVideos {
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
