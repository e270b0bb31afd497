// The version of the plugin contract (`mediagate/plugin`), apart from the package's own version: it changes
// only when what plugins compile against changes (the API report, docs/plugin-api.md, shows every such change).
// A plugin says which versions it was written for (`apiVersion: "^1.0"` in definePlugin), and the kernel refuses
// one it does not satisfy at boot, by name, as Fastify refuses a plugin written for another Fastify.
//
// Ranges: `^MAJOR` or `^MAJOR.MINOR` (that major, at least that minor), `MAJOR.x`, or an exact `MAJOR.MINOR`
// or `MAJOR.MINOR.PATCH`. A minor version only adds; a major one may remove or change.

/** The plugin contract's version: MAJOR.MINOR.PATCH. */
export const PLUGIN_API_VERSION = "1.0.0";

const RANGE = /^(\^)?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$/;

/** Whether `version` (MAJOR.MINOR.PATCH) is within `range`; a range this module cannot read is never satisfied. */
export function satisfiesApiRange(range: string, version: string = PLUGIN_API_VERSION): boolean {
  const m = RANGE.exec(range.trim());
  const v = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (!m || !v) return false;
  const [, caret, major, minor, patch] = m;
  const [vMajor, vMinor, vPatch] = [Number(v[1]), Number(v[2]), Number(v[3])];
  if (Number(major) !== vMajor) return false;
  if (minor === undefined || minor === "x") return true;
  if (caret) {
    if (vMinor !== Number(minor)) return vMinor > Number(minor);
    return patch === undefined || patch === "x" || vPatch >= Number(patch);
  }
  if (vMinor !== Number(minor)) return false;
  return patch === undefined || patch === "x" || vPatch === Number(patch);
}
