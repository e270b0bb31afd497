// The environment of a child process (native ffmpeg and ffprobe, yt-dlp). Node hands a child the whole
// environment unless told otherwise, and ours holds ADMIN_TOKEN, DATABASE_URL, REDIS_URL, provider keys and
// proxy settings: nothing a media tool needs, and everything a tool fed hostile input (or one that logs its
// environment) could leak. A child gets only what it needs to run: PATH to find its helpers, a HOME and TMPDIR
// that are ours to give (a private temp dir where the caller has one), a fixed UTF-8 locale so messages parse
// the same on every machine, and what the caller adds by name. Proxies only when passed explicitly.
import { tmpdir } from "node:os";
import process from "node:process";

export interface ChildEnvOptions {
  /** HOME and TMPDIR (default: the OS temp dir). A per-run private dir keeps tools' caches out of shared places. */
  dir?: string;
  /** More variables by name; undefined values are left out. */
  extra?: Readonly<Record<string, string | undefined>>;
  /** PATH (default: the server's own PATH, so the same binaries are found). */
  path?: string;
}

const FALLBACK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** A fresh object with only the variables a child process may see. */
export function childEnv(options: ChildEnvOptions = {}): Record<string, string> {
  const dir = options.dir ?? tmpdir();
  const env: Record<string, string> = {
    PATH: options.path ?? process.env.PATH ?? FALLBACK_PATH,
    HOME: dir,
    TMPDIR: dir,
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
  };
  if (process.platform === "win32") {
    // Windows programs cannot start without these; they name system folders, not secrets.
    for (const name of ["SystemRoot", "windir", "PATHEXT", "COMSPEC"]) {
      const value = process.env[name];
      if (value !== undefined) env[name] = value;
    }
    env.TEMP = dir;
    env.TMP = dir;
  }
  for (const [name, value] of Object.entries(options.extra ?? {})) if (value !== undefined) env[name] = value;
  return env;
}
