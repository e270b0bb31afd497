// The spec's timestamp format (convention 3): UTC `YYYY-MM-DD HH:MM:SS`; `since` parameters take ISO 8601.

import { ApiError } from "./api-error.ts";
import { KERNEL_ERRORS } from "./errors.ts";

export function formatTimestamp(value: Date | string | number | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const d = value instanceof Date ? value : new Date(value);
  return d.toISOString().slice(0, 19).replace("T", " ");
}

export function unixSeconds(value: Date | number): number {
  return Math.floor((value instanceof Date ? value.getTime() : value) / 1000);
}

// ISO 8601 as partners send it: a date, or a date-time with optional seconds, fraction and zone. A date-time
// without a zone is read as UTC, like every timestamp this API returns.
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Parses a `since` value; undefined or empty means all time. Invalid input is a 400. */
export function parseSince(value: unknown): Date | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new ApiError(400, KERNEL_ERRORS.invalidSince);
  const m = ISO_8601.exec(value.trim());
  if (!m) throw new ApiError(400, KERNEL_ERRORS.invalidSince);
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone] = m;
  let normalized = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac}`;
  normalized += !zone || zone === "Z" ? "Z" : zone.includes(":") ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const date = new Date(normalized);
  // Date accepts 2026-02-31 by rolling over; a partner who wrote that made a mistake.
  if (Number.isNaN(date.getTime()) || (!zone && date.getUTCDate() !== Number(d))) {
    throw new ApiError(400, KERNEL_ERRORS.invalidSince);
  }
  return date;
}
