// Failures every generative contract shares: a provider throws one, the consuming plugin decides what the
// partner sees (its own sanitized sentence, never the provider's words).

/** A failure worth trying on the next provider of a model's chain (time-outs, 5xx, overload). */
export class TransientProviderError extends Error {}

/** The provider refused the prompt on content-safety grounds. */
export class UnsafeContentError extends Error {}
