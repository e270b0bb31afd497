// A GraphQL subscription over SSE (graphql-yoga's "distinct connections" mode) against a real server: every
// event's JSON as it arrives, and whether the server ended the stream.
export interface SseSubscription {
  /** Each event's `data` parsed, in order of arrival. */
  readonly events: Array<{ data?: any; errors?: Array<{ message: string; extensions?: any }> }>;
  /** Settles once the stream has ended (by the server, or a cut connection). */
  readonly done: Promise<void>;
  ended(): boolean;
  /** Stops reading and closes the connection. */
  close(): void;
}

export function subscribeSse(
  base: string,
  opts: { key: string; query: string; variables?: Record<string, unknown>; userAgent?: string },
): SseSubscription {
  const events: SseSubscription["events"] = [];
  const abort = new AbortController();
  let ended = false;
  const done = (async () => {
    try {
      const res = await fetch(`${base}/graphql`, {
        method: "POST",
        signal: abort.signal,
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          authorization: `Bearer ${opts.key}`,
          "user-agent": opts.userAgent ?? "mediagate-sse-test/1.0",
        },
        body: JSON.stringify({ query: opts.query, variables: opts.variables ?? {} }),
      });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n/g, "\n");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          if (data.trim()) events.push(JSON.parse(data));
        }
      }
    } catch {
      // the connection was cut (or closed here): `ended` stays as the stream left it
    }
    ended = true;
  })();
  return { events, done, ended: () => ended, close: () => abort.abort() };
}
