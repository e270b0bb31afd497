// A fresh embedded database without initdb. PGlite's initdb takes 2-3 s on an idle machine and 8-17 s under
// a loaded test run, and a test suite makes hundreds of databases that all start out as the same files. So a
// process runs initdb once, keeps the result as a tarball, and starts every later database from it: in memory
// (PGlite's `loadDataDir`, under a second) or on disk, copied into a DATA_DIR before a server opens it.
// The files are the same initdb would write; nothing of ours is in them (migrations still run per kernel).
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { PGlite } from "@electric-sql/pglite";

let tarball: Promise<Blob> | undefined;

/** initdb's files as a tarball for PGlite's `loadDataDir`, made once per process. */
export function pgliteTemplate(): Promise<Blob> {
  tarball ??= (async () => {
    const pglite = new PGlite();
    try {
      await pglite.waitReady;
      return await pglite.dumpDataDir("none");
    } finally {
      await pglite.close();
    }
  })();
  // A failure is not cached: the next caller tries again.
  tarball.catch(() => (tarball = undefined));
  return tarball;
}

let directory: Promise<string> | undefined;

/** The same files as a `pgdata` directory on disk, made once per process and removed when it exits. */
function templateDirectory(): Promise<string> {
  directory ??= (async () => {
    const root = mkdtempSync(join(tmpdir(), "mediagate-pgdata-template-"));
    process.on("exit", () => rmSync(root, { recursive: true, force: true }));
    const dataDir = join(root, "pgdata");
    const pglite = new PGlite(dataDir, { loadDataDir: await pgliteTemplate() });
    await pglite.waitReady;
    await pglite.close();
    return dataDir;
  })();
  directory.catch(() => (directory = undefined));
  return directory;
}

/**
 * Puts a fresh cluster's files in `DATA_DIR/pgdata` when there are none yet, so the server that opens the
 * directory resumes instead of running initdb. A directory that already has a database is left alone.
 */
export async function seedEmbeddedDataDir(dataDir: string): Promise<void> {
  const target = join(dataDir, "pgdata");
  if (existsSync(join(target, "PG_VERSION"))) return;
  cpSync(await templateDirectory(), target, { recursive: true });
}
