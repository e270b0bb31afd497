#!/usr/bin/env node
// The `mediagate` command of the package (docs/package.md). Plain JavaScript, so that it starts without a
// TypeScript loader; each command then registers tsx (a dependency of the package, found from here, not from
// the working directory) and runs a TypeScript entry of the package in this process, with the working
// directory and the environment kept:
//
//   mediagate start              the server, as `npm start` (node --import tsx main.ts) in this repository
//   mediagate admin <command>    the admin CLI (cli/admin.ts), the same arguments as `npm run cli --`
//   mediagate new-plugin <name>  scaffolds a plugin folder (cli/new-plugin.ts)
//
// Running in this process rather than a child keeps signals simple: SIGTERM or Ctrl-C reach main.ts's own
// graceful shutdown once, as under `npm start`.
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const ENTRIES = {
  start: "main.ts",
  admin: "cli/admin.ts",
  "new-plugin": "cli/new-plugin.ts",
};

const USAGE = `mediagate <command>

  start               start the server (reads mediagate.config.ts and the environment of this folder)
  admin <command>     the admin CLI against a running server; "mediagate admin" lists its commands
  new-plugin <name>   scaffold a plugin folder <name>/ here, with a test that passes at once
  help                this text`;

const [command, ...args] = process.argv.slice(2);

if (command === undefined || command === "help" || command === "--help" || command === "-h") {
  console.log(USAGE);
} else if (!Object.hasOwn(ENTRIES, command)) {
  console.error(`mediagate: unknown command "${command}"\n\n${USAGE}`);
  process.exitCode = 2;
} else {
  const entry = join(ROOT, ENTRIES[command]);
  const { register } = await import("tsx/esm/api");
  register();
  // The entry sees itself as the script run, with its own arguments (cli/admin.ts and cli/new-plugin.ts run
  // only when they are the script).
  process.argv = [process.argv[0], entry, ...args];
  await import(pathToFileURL(entry).href);
}
