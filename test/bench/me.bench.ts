// Benchmark: requests per second of an authenticated GET /me against a bare h3 handler answering the same
// JSON, measured in one run on this machine, reported as a ratio (and each server's memory). Target: the
// ratio is at least 0.5. Also the same app without the shared HTTP manners (X-Request-Id, compression, CORS,
// metrics, access log; transports/http-conventions.ts), served by the same process: their cost as a ratio, target
// at least 0.9, with an A/A control (the app with the manners against itself on a second port). And the same
// read over GraphQL on the same server: its saturation rate against REST's (target at least 0.5), and its
// latency at half of REST's saturation rate against REST's there (target at most 2x).
// Run: npm run bench  (BENCH_SECONDS, BENCH_CONNECTIONS to change the load; BENCH_ROUNDS the number of rounds;
// BENCH_VERBOSE=1 prints each round's figures; BENCH_DATABASE_URL=postgres://... serves the app from an empty
// Postgres database instead of the embedded PGlite).
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import process from "node:process";
import autocannon from "autocannon";

const root = resolve(import.meta.dirname!, "../..");
const seconds = Number(process.env.BENCH_SECONDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

// The load generator (this process, every thread) on CPU 0 and each server on CPU 1, when the machine has two
// CPUs or more and taskset is there: sharing CPUs, the two took turns at the scheduler's whim, and one load of a
// few seconds varied by 10-20 % from the next. BENCH_PIN=0 turns it off.
const SERVER_CPU = "1";
const pin =
  process.env.BENCH_PIN !== "0" &&
  availableParallelism() >= 2 &&
  spawnSync("taskset", ["-a", "-p", "-c", "0", String(process.pid)], { stdio: "ignore" }).status === 0;

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

// The same read over GraphQL, every field of GET /me's body, against the same server as "me".
const GRAPHQL_ME = JSON.stringify({
  query: "{ me { request_id name api_key_prefix pricing_tier credits_remaining is_active created_at last_active } }",
});

/** CPU seconds the process has used (user + system), from /proc: the server's own cost, whatever the load generator's. */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime, fields 14 and 15 of stat (11 and 12 after the command), in clock ticks of 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Server {
  /** Its ports: the bare handler's one; the app's with the manners, its control's, and its own without them. */
  ports: number[];
  key: string;
  pid: number;
  stop(): void;
}

async function startServer(mode: "bare" | "me"): Promise<Server> {
  const ports = mode === "bare" ? [await freePort()] : [await freePort(), await freePort(), await freePort()];
  // Node itself with tsx as a loader (not the tsx binary, which would fork): the pid is the server's, so its
  // RSS and CPU are measured and the kill reaches it.
  const command = [process.execPath, "--import", "tsx", "test/bench/servers.ts", mode, ...ports.map(String)];
  // Pinned to the server's own CPU (taskset execs node: the pid stays the server's).
  const pinned = pin ? ["taskset", "-c", SERVER_CPU, ...command] : command;
  const child = spawn(pinned[0]!, pinned.slice(1), { cwd: root, stdio: ["ignore", "pipe", "ignore"] });
  const key = await new Promise<string>((res, rej) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\S+)/.exec(out);
      if (m) res(m[1]!);
    });
    child.once("exit", (code) => rej(new Error(`${mode} server exited with ${code}`)));
  });
  return { ports, key, pid: child.pid!, stop: () => child.kill("SIGKILL") };
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  rss: number;
  /** Server CPU per answered request, in microseconds. */
  cpuUs: number;
}

/** One load against a port of a running server: saturating (`connections`), or at a fixed overall rate. */
async function load(
  server: Server,
  port: number,
  over: "rest" | "graphql",
  options: { rate?: number; warm?: boolean } = {},
): Promise<Measured> {
  const graphql = over === "graphql";
  const url = `http://127.0.0.1:${port}${graphql ? "/graphql" : "/api/v1/partner/me"}`;
  const headers: Record<string, string> = {
    authorization: `Bearer ${server.key}`,
    "user-agent": "mediagate-bench/1.0",
    ...(graphql ? { "content-type": "application/json" } : {}),
  };
  const base = {
    url,
    headers,
    connections,
    ...(options.rate ? { overallRate: options.rate } : {}),
    ...(graphql ? { method: "POST" as const, body: GRAPHQL_ME } : {}),
  };
  if (options.warm !== false) await autocannon({ ...base, duration: 2 }); // warm-up: JIT, caches
  const cpuBefore = cpuSecondsOf(server.pid);
  const result = await autocannon({ ...base, duration: seconds });
  const cpu = cpuSecondsOf(server.pid) - cpuBefore;
  if (result.non2xx || result.errors) throw new Error(`${over}: ${result.non2xx} non-2xx and ${result.errors} errors`);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rss: rssOf(server.pid),
    cpuUs: (cpu * 1e6) / Math.max(1, result.requests.total),
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const line = (name: string, m: Measured) =>
  `${name.padEnd(22)} ${m.rps.toFixed(0).padStart(6)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms  cpu ${m.cpuUs.toFixed(0)} µs/req  rss ${m.rss.toFixed(0)} MB`;

// Both servers are started first and loaded in turn, round after round, and each ratio is the median of the
// ratios within a round. On a 2-CPU machine shared with the load generator one load of a few seconds varies by
// 10-20 % from the next, more than what the manners ratio measures, and the drift is slow: loads next to each
// other in time see the same machine. The manners are priced within one process (test/bench/servers.ts says
// why), with the control's ratio printed next to theirs; many short rounds rather than a few long ones, since
// the noise is from one load to the next and a median of many pairs narrows it.
// 18: the order below repeats every six rounds, so each port is first, second and third, and first after
// GraphQL's load, as often as the others (with 16, the first manners port followed GraphQL twice as often as
// its control).
const rounds = Number(process.env.BENCH_ROUNDS ?? 18);
const variants = ["bare", "manners", "control", "plain", "graphql"] as const;
type Variant = (typeof variants)[number];
const bareServer = await startServer("bare");
const meServer = await startServer("me");
const [mannersPort, controlPort, plainPort] = meServer.ports as [number, number, number];
const loadOf: Record<Variant, (options?: { rate?: number; warm?: boolean }) => Promise<Measured>> = {
  bare: (o) => load(bareServer, bareServer.ports[0]!, "rest", o),
  manners: (o) => load(meServer, mannersPort, "rest", o),
  control: (o) => load(meServer, controlPort, "rest", o),
  plain: (o) => load(meServer, plainPort, "rest", o),
  graphql: (o) => load(meServer, mannersPort, "graphql", o),
};
const runs = new Map<Variant, Measured[]>(variants.map((v) => [v, []]));
let half: { rest: Measured; graphql: Measured; rate: number };

try {
  for (const variant of variants) await loadOf[variant](); // warm-up of each
  for (let round = 0; round < rounds; round++) {
    // The three ports the manners ratio and its control compare are loaded next to each other, in an order
    // that turns each round (and runs backwards every other round), so none is always first or always last;
    // the bare handler and GraphQL come before or after them, in turn.
    const shift = round % 3;
    const trio = (["manners", "control", "plain"] as const)
      .slice(shift)
      .concat((["manners", "control", "plain"] as const).slice(0, shift));
    const order: Variant[] = round % 2 ? ["bare", ...trio.reverse(), "graphql"] : ["graphql", ...trio, "bare"];
    for (const variant of order) runs.get(variant)!.push(await loadOf[variant]({ warm: false }));
    if (process.env.BENCH_VERBOSE)
      console.log(`round ${round}: ${order.map((v) => `${v} ${runs.get(v)!.at(-1)!.rps.toFixed(0)}`).join(", ")}`);
  }
  // Both at half of REST's saturation rate on that server, where GraphQL's latency is to be at most twice REST's.
  const rate = Math.round(median(runs.get("manners")!.map((r) => r.rps)) / 2);
  half = {
    rate,
    rest: await loadOf.manners({ rate, warm: false }),
    graphql: await loadOf.graphql({ rate, warm: false }),
  };
} finally {
  bareServer.stop();
  meServer.stop();
}

const ratio = (a: Measured[], b: Measured[]) => median(a.map((x, i) => x.rps / b[i]!.rps));
const cpuRatio = (a: Measured[], b: Measured[]) => median(a.map((x, i) => b[i]!.cpuUs / x.cpuUs));
// The app with the manners is measured twice a round (its port and the control's): the manners ratio takes
// both, each round's mean of the two against the plain port, which halves what one port's luck adds to it.
const both = (a: Measured[], b: Measured[]): Measured[] =>
  a.map((x, i) => ({ ...x, rps: (x.rps + b[i]!.rps) / 2, cpuUs: (x.cpuUs + b[i]!.cpuUs) / 2 }));
const medianRun = (list: Measured[]) => [...list].sort((a, b) => a.rps - b.rps)[list.length >> 1]!;
const [bare, manners, control, plain, graphql] = variants.map((v) => runs.get(v)!) as Measured[][];

console.log(
  `${rounds} rounds of ${seconds} s per load, ${connections} connections, on ${process.env.BENCH_DATABASE_URL ? "Postgres" : "PGlite"}${pin ? `, servers on CPU ${SERVER_CPU} and the load on CPU 0` : ""}`,
);
console.log(line("bare h3 handler", medianRun(bare!)));
console.log(line("authenticated /me", medianRun(manners!)));
console.log(line("/me, control port", medianRun(control!)));
console.log(line("/me without manners", medianRun(plain!)));
console.log(line("GraphQL { me }", medianRun(graphql!)));
console.log(`ratio /me : bare      ${ratio(manners!, bare!).toFixed(2)}  (target >= 0.50)`);
console.log(
  `ratio manners         ${ratio(both(manners!, control!), plain!).toFixed(2)} by req/s, ${cpuRatio(both(manners!, control!), plain!).toFixed(2)} by CPU per request  (/me on both its ports : /me without the HTTP manners: request id, compression, CORS, metrics, access log; target >= 0.90); the first port alone ${ratio(manners!, plain!).toFixed(2)} and ${cpuRatio(manners!, plain!).toFixed(2)}`,
);
console.log(
  `ratio control         ${ratio(control!, manners!).toFixed(2)} by req/s, ${cpuRatio(control!, manners!).toFixed(2)} by CPU per request  (the same app on two ports: 1.00 but for the measure's own noise)`,
);
console.log(
  `ratio GraphQL : REST  ${ratio(graphql!, manners!).toFixed(2)} by req/s, ${cpuRatio(graphql!, manners!).toFixed(2)} by CPU per request  (target >= 0.50)`,
);
console.log(
  `at ${half.rate} req/s (half of REST's saturation): REST p50 ${half.rest.p50} ms p99 ${half.rest.p99} ms, GraphQL p50 ${half.graphql.p50} ms p99 ${half.graphql.p99} ms; GraphQL : REST latency p50 ${(half.graphql.p50 / Math.max(half.rest.p50, 1)).toFixed(2)} (target <= 2)`,
);
