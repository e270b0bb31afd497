// Files only this service's user may read: DATA_DIR, its blobs, the embedded database and the admin token
// hold partners' media and secrets. Modes are set explicitly (mkdir/open with the mode, then chmod), so they
// do not depend on the umask the process was started with: a umask can only take bits away from a mode given
// to mkdir or open, and chmod is not subject to it at all.
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";

const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

// The directories mkdir(recursive) created, from the first one it made down to `path`.
function createdChain(first: string | undefined, path: string): string[] {
  if (first === undefined) return [];
  const chain = [first];
  const rest = relative(first, path);
  if (rest) {
    let at = first;
    for (const part of rest.split(sep)) chain.push((at = join(at, part)));
  }
  return chain;
}

/**
 * Creates `path` (and missing parents) as 0700. A directory that already exists keeps its mode unless
 * `tighten` (for directories that are ours alone, such as DATA_DIR/blobs): DATA_DIR itself may be a volume an
 * operator made and shares on purpose, and what we put inside it is private either way.
 */
export function privateDirSync(path: string, options: { tighten?: boolean } = {}): void {
  const first = mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const dir of createdChain(first, path)) chmodSync(dir, PRIVATE_DIR_MODE);
  if (options.tighten && first === undefined) chmodSync(path, PRIVATE_DIR_MODE);
}

async function privateDir(path: string): Promise<void> {
  const first = await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const dir of createdChain(first, path)) await chmod(dir, PRIVATE_DIR_MODE);
}

/** Writes `data` to `file` as 0600, its missing parent directories 0700. */
export async function writePrivateFile(file: string, data: string | Uint8Array): Promise<void> {
  await privateDir(dirname(file));
  await writeFile(file, data, { mode: PRIVATE_FILE_MODE });
  // A file that existed keeps the mode it was created with; make it ours alone as well.
  await chmod(file, PRIVATE_FILE_MODE);
}

export function writePrivateFileSync(file: string, data: string): void {
  privateDirSync(dirname(file));
  writeFileSync(file, data, { mode: PRIVATE_FILE_MODE });
  chmodSync(file, PRIVATE_FILE_MODE);
}

/** Every directory under `root` (and root) to 0700, every file to 0600; symbolic links are left alone. */
export function tightenTreeSync(root: string): void {
  chmodSync(root, PRIVATE_DIR_MODE);
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) tightenTreeSync(path);
    else if (entry.isFile()) chmodSync(path, PRIVATE_FILE_MODE);
  }
}
