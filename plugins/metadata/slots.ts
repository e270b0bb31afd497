// The shared video remux slots (spec part 1, "Metadata removal": busy is a 503): at most VIDEO_SLOTS remuxes
// at once across every API process, on the kernel's shared counters; images need none (milliseconds of byte
// surgery, walked in slices of the event loop).
import { ApiError, type Clock, type Counters, createSharedSlots, type SharedSlots } from "mediagate/plugin";
import { METADATA_ERRORS } from "./errors.ts";

export const VIDEO_SLOTS = 2;
export const VIDEO_SLOT_KEY = "metadata:video-remux";

/** What a slot's holder gets: the slot's end (aborted when it is taken back) and its deadline. */
export interface SlotHold {
  signal: AbortSignal;
  deadline: number;
}

// One set of slots per counters store: a test kernel's counters are its own.
const slotsByCounters = new WeakMap<Counters, SharedSlots>();

export function videoSlots(counters: Counters, clock: Clock): SharedSlots {
  let slots = slotsByCounters.get(counters);
  if (!slots) {
    slots = createSharedSlots(counters, {
      key: VIDEO_SLOT_KEY,
      capacity: VIDEO_SLOTS,
      busy: () => new ApiError(503, METADATA_ERRORS.videoBusy),
      now: () => clock.now(),
    });
    slotsByCounters.set(counters, slots);
  }
  return slots;
}
