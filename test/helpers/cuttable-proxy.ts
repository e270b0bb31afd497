// A TCP proxy in front of a backend (Postgres on 127.0.0.1:5432, Redis on :6379) that a test can cut: an
// outage of the backend as the server under test sees it, without stopping the shared backend that other
// tests use. `cut()` resets every connection through it and every new one as it arrives (the client sees
// ECONNRESET at once, as from a server that went down); `restore()` forwards again. The listener stays up
// throughout, so the port cannot be taken by another process meanwhile.
import net from "node:net";

export interface CuttableProxy {
  /** The port the proxy listens on, on 127.0.0.1. */
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Resets every open connection, and every new one until `restore()`. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Sockets open through the proxy right now (each connection counts its two ends). */
  readonly open: number;
  close(): Promise<void>;
}

export async function cuttableProxy(target: { host?: string; port: number }): Promise<CuttableProxy> {
  const host = target.host ?? "127.0.0.1";
  const sockets = new Set<net.Socket>();
  let cutNow = false;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  const server = net.createServer((client) => {
    // Cut: the connection is reset as soon as it is accepted (ECONNRESET), a refusal that keeps the port ours.
    if (cutNow) return void client.resetAndDestroy();
    track(client);
    const upstream = net.connect({ host, port: target.port });
    track(upstream);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    async cut() {
      cutNow = true;
      for (const s of sockets) s.resetAndDestroy();
    },
    async restore() {
      cutNow = false;
    },
    get open() {
      return sockets.size;
    },
    async close() {
      cutNow = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
