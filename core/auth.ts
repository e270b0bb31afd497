// Authentication (spec Authentication 1-2): Bearer svc_partner_... keys, looked up by hash.

import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";
import type { Accounts, Partner } from "./accounts.ts";
import { API_KEY_PREFIX, hashApiKey } from "./ids.ts";

// Keys we issue are the prefix plus base64url; anything else is malformed without a lookup.
const BEARER = /^Bearer\s+(svc_partner_[A-Za-z0-9_-]{8,200})\s*$/;

export async function authenticate(accounts: Accounts, header: string | null): Promise<Partner> {
  const match = header ? BEARER.exec(header) : null;
  if (!match || !match[1]!.startsWith(API_KEY_PREFIX)) throw new ApiError(401, KERNEL_ERRORS.missingAuthorization);
  const partner = await accounts.byKeyHash(hashApiKey(match[1]!));
  if (!partner) throw new ApiError(401, KERNEL_ERRORS.invalidApiKey);
  if (!partner.isActive) throw new ApiError(403, KERNEL_ERRORS.deactivatedKey);
  return partner;
}
