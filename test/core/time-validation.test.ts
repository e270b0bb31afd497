import { suite } from "uvu";
import * as assert from "uvu/assert";
import { apiKeyPrefix, hashApiKey, newApiKey } from "../../core/ids.ts";
import { ApiError } from "../../lib/api-error.ts";
import { PAGE_BOUNDS, pageQuery } from "../../lib/paging.ts";
import { allocateServiceId, randomServiceId, SERVICE_ID } from "../../lib/service-ids.ts";
import { validate } from "../../lib/standard-schema.ts";
import { formatTimestamp, parseSince } from "../../lib/time.ts";
import { partnerJobIdField } from "../../lib/validation.ts";
import { openDatabase } from "../../storage/db.ts";
import { migrate } from "../../storage/migrate.ts";
import { kernelMigrations } from "../../storage/migrations/kernel.ts";

const t = suite("timestamps, since, pagination, partner_job_id, ids");

t("timestamps are UTC YYYY-MM-DD HH:MM:SS", () => {
  assert.is(formatTimestamp(new Date(Date.UTC(2026, 10, 22, 3, 4, 5, 678))), "2026-11-22 03:04:05");
  assert.is(formatTimestamp(null), null);
});

t("since takes ISO 8601 dates and timestamps", () => {
  assert.is(parseSince(undefined), undefined);
  assert.is(parseSince("")?.toISOString(), undefined);
  assert.is(parseSince("2026-11-01")!.toISOString(), "2026-11-01T00:00:00.000Z");
  assert.is(parseSince("2026-11-01T10:20:30Z")!.toISOString(), "2026-11-01T10:20:30.000Z");
  assert.is(parseSince("2026-11-01T10:20:30+02:00")!.toISOString(), "2026-11-01T08:20:30.000Z");
  assert.is(parseSince("2026-11-01T10:20")!.toISOString(), "2026-11-01T10:20:00.000Z");
  for (const bad of ["yesterday", "2026-13-01", "2026-02-31", "1700000000", "2026-11-01T25:00:00Z"]) {
    assert.throws(
      () => parseSince(bad),
      (e: unknown) => e instanceof ApiError && e.status === 400,
      bad,
    );
  }
});

t("pagination: each list's default and maximum, clamped; junk is a 400", async () => {
  const tx = pageQuery(PAGE_BOUNDS.transactions);
  assert.equal(await validate(tx, {}), { ok: true, value: { limit: 50, offset: 0 } });
  assert.equal(await validate(tx, { limit: "500", offset: "10" }), { ok: true, value: { limit: 200, offset: 10 } });
  assert.equal(await validate(pageQuery(PAGE_BOUNDS.standard), { limit: "51" }), {
    ok: true,
    value: { limit: 50, offset: 0 },
  });
  assert.equal(await validate(pageQuery(PAGE_BOUNDS.socialDownloads), {}), {
    ok: true,
    value: { limit: 25, offset: 0 },
  });
  assert.equal(await validate(tx, { limit: "0" }), { ok: false, message: "limit must be a positive integer" });
  assert.equal(await validate(tx, { limit: "abc" }), { ok: false, message: "limit must be a positive integer" });
  assert.equal(await validate(tx, { offset: "-1" }), { ok: false, message: "offset must be a non-negative integer" });
});

t("partner_job_id: 1-64 of letters, digits, - / _ (music: no /)", async () => {
  const f = partnerJobIdField();
  const m = partnerJobIdField({ music: true });
  assert.equal(await validate(f, undefined), { ok: true, value: null });
  assert.equal(await validate(f, "order-1/a_b"), { ok: true, value: "order-1/a_b" });
  assert.equal(await validate(f, "x".repeat(64)), { ok: true, value: "x".repeat(64) });
  for (const bad of ["", "x".repeat(65), "with space", "é", 12, "a.b"])
    assert.is((await validate(f, bad)).ok, false, String(bad));
  assert.is((await validate(m, "a/b")).ok, false);
  assert.is((await validate(m, "a_b-c")).ok, true);
});

t("ids: svc- + 8 hex; keys: prefix + first 8, stored as a hash", () => {
  assert.match(randomServiceId(), SERVICE_ID);
  const k = newApiKey();
  assert.ok(k.key.startsWith("svc_partner_"));
  assert.ok(k.key.length >= "svc_partner_".length + 22); // >= 128 bits in base64url
  assert.is(k.prefix, apiKeyPrefix(k.key));
  assert.is(k.prefix.length, "svc_partner_".length + 8);
  assert.is(k.hash, hashApiKey(k.key));
  assert.not.ok(k.hash.includes(k.key));
});

t("allocateServiceId never hands out the same id twice", async () => {
  const db = await openDatabase({});
  try {
    await migrate(db.kysely, kernelMigrations);
    const ids = await Promise.all(Array.from({ length: 300 }, () => allocateServiceId(db.kysely)));
    assert.is(new Set(ids).size, 300);
    for (const id of ids) assert.match(id, SERVICE_ID);
  } finally {
    await db.close();
  }
});

t.run();
