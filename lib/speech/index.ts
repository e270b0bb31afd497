// Speech synthesis for sandboxes that speak: eSpeak NG in a worker (espeak.ts) and speech with the time of
// every word (timed.ts). Exported through mediagate/plugin.
export { speak, wavInfo, type EspeakVoice, type Wav } from "./espeak.ts";
export { speakTimed, spokenWords, type SpeakTimedOptions } from "./timed.ts";
export { frameRms, pcm16Wav, rmsBetween, wavSamples } from "./pcm.ts";
