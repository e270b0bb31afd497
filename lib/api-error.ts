// An error that carries the spec's status and text. A handler throws one; the transport renders it as
// `{error, ...extra}` with that status. lib/errors.ts holds the kernel's texts, core/errors.ts the outage mapping;
// this class sits on the SDK floor so lib/ answers in the spec's words without importing the kernel.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  body(): Record<string, unknown> {
    return { error: this.message, ...this.extra };
  }
}
