// Speech synthesis for sandboxes that speak: eSpeak NG in a worker (espeak.ts) and speech with the time of
// every word (timed.ts). Exported through mediagate/plugin.
export { type EspeakVoice, speak, type Wav, wavInfo } from "./espeak.ts";
export { frameRms, pcm16Wav, rmsBetween, wavSamples } from "./pcm.ts";
export { type SpeakTimedOptions, speakTimed, spokenWords } from "./timed.ts";
