// The voiceover job kind (spec part 3, "Voiceover record"): the request runs it itself, the kernel only ends
// what a dead process left behind.
import { type JobKindDeclaration, oneStepStates } from "mediagate/plugin";
import { VOICEOVER_ERRORS } from "./errors.ts";
import { audioKeyOf } from "./records.ts";

/**
 * The synchronous kind the request runs itself (no queue): declared so that a voiceover whose process died
 * mid-request is ended by the kernel (core/jobs.ts recoverOrphans): success when its audio was stored already,
 * otherwise failed with the service's sanitized text and refunded, as if the provider had failed.
 */
export const voiceoverJob: JobKindDeclaration = {
  ...oneStepStates("processing", "success", "failed"),
  failError: VOICEOVER_ERRORS.unavailable,
  async recover({ db, jobId }) {
    const audioKey = await audioKeyOf(db, jobId);
    return audioKey ? { state: "success", output: { audio_key: audioKey } } : null;
  },
};
