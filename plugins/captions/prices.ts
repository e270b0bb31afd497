// The price of a caption job (spec part 2 "Caption job", part 1 `costs.captions`); a re-burn is free.
import type { OperationContext } from "mediagate/plugin";

/** Standard basis; 28 on api_plus10 through the kernel's tier math. */
export const CAPTION_CREDITS = 25;

export const CAPTION_COSTS = { captions: CAPTION_CREDITS };

/** What the calling account pays for one caption job (its tier applied). */
export const captionPrice = (ctx: Pick<OperationContext, "priceFor">) =>
  ctx.priceFor({ lines: [{ key: ["captions"], rate: CAPTION_CREDITS, units: 1 }] });
