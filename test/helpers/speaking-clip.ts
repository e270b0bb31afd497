// The request body of the shortest video with speech the sandbox makes (5 s at 720p, a line said aloud):
// the input of the tests whose captions need words to hear (the captions restart, the chaos scenario).
export const SPEAKING_CLIP = {
  prompt: 'She says "the quick brown fox jumps over the lazy dog"',
  model: "alpha-v3-text-to-video",
  quality: "720p",
  duration: 5,
  sound: true,
  aspect_ratio: "16:9",
} as const;
