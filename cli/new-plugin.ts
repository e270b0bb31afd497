// `mediagate new-plugin <name>`: scaffolds a plugin folder `<name>/` in the working directory from
// templates/plugin/ (declaration, input, errors, the handler of one free operation at `POST /<name>`, a test
// through `mediagate/testing` that passes at once, a README), then prints what to do next. The folder only
// imports "mediagate/plugin", "mediagate/testing", zod and node:test, so it works where mediagate is
// installed as a package and inside mediagate's own checkout (the package's self-reference).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import process from "node:process";
import { PLUGIN_API_VERSION } from "../core/plugin-version.ts";

const TEMPLATES = join(import.meta.dirname ?? "cli", "..", "templates", "plugin");

/** Lowercase words of letters and digits joined by single dashes, starting with a letter: a plugin name the
 * kernel accepts (core/plugin.ts), a route, a folder and (camelCased) a GraphQL field at once. */
const NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const MAX_NAME = 40;

export class ScaffoldError extends Error {}

/** Why `name` cannot be scaffolded in `parent`, or undefined when it can. */
export function refusal(name: string | undefined, parent: string): string | undefined {
  if (!name) return "give the plugin a name: mediagate new-plugin <name>";
  if (!NAME.test(name) || name.length > MAX_NAME) {
    return `"${name}" is not a plugin name: use lowercase letters, digits and single dashes, starting with a letter, at most ${MAX_NAME} characters (e.g. word-count)`;
  }
  if (existsSync(join(parent, name))) return `${join(parent, name)} already exists: choose another name or folder`;
  return undefined;
}

/** The spellings of a name the templates use: `{{name}}` word-count, `{{camel}}` wordCount, `{{Pascal}}`
 * WordCount, `{{CONST}}` WORD_COUNT, `{{apiRange}}` the plugin API range, e.g. ^1.0. */
export function spellings(name: string): Record<string, string> {
  const words = name.split("-");
  const pascal = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
  const [major, minor] = PLUGIN_API_VERSION.split(".");
  return {
    name,
    camel: pascal.charAt(0).toLowerCase() + pascal.slice(1),
    Pascal: pascal,
    CONST: words.join("_").toUpperCase(),
    apiRange: `^${major}.${minor}`,
  };
}

/** The file a template becomes: `plugin.test.ts.tmpl` is `<name>.test.ts`, the others lose `.tmpl`. */
const targetName = (template: string, name: string): string =>
  template === "plugin.test.ts.tmpl" ? `${name}.test.ts` : template.replace(/\.tmpl$/, "");

/** Writes `<parent>/<name>/` from the templates; returns the paths written, relative to the new folder. */
export function scaffoldPlugin(name: string, parent: string = process.cwd()): string[] {
  const why = refusal(name, parent);
  if (why) throw new ScaffoldError(why);
  const values = spellings(name);
  const dir = join(parent, name);
  mkdirSync(dir);
  const written: string[] = [];
  for (const template of readdirSync(TEMPLATES).sort()) {
    if (!template.endsWith(".tmpl")) continue;
    const text = readFileSync(join(TEMPLATES, template), "utf8").replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
      const value = values[key];
      if (value === undefined) throw new Error(`templates/plugin/${template}: unknown placeholder ${whole}`);
      return value;
    });
    const file = targetName(template, name);
    writeFileSync(join(dir, file), text, { flag: "wx" });
    written.push(file);
  }
  return written;
}

/** Whether `specifier` resolves from `dir` (as the scaffolded files will import it). */
function resolvesFrom(dir: string, specifier: string): boolean {
  try {
    createRequire(join(dir, "noop.js")).resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

/** What to do after scaffolding `name` in `parent`. */
export function nextSteps(name: string, parent: string): string {
  const install = ["mediagate/plugin", "zod"].filter((p) => !resolvesFrom(parent, p)).map((p) => p.split("/")[0]);
  const steps = [
    ...(install.length ? [`Install what it imports: npm install ${install.join(" ")}`] : []),
    `Run its test: npx tsx ${name}/${name}.test.ts`,
    `Serve it: list it in mediagate.config.ts in this folder (${name}/README.md shows the whole file),
       plugins: [...defaultPlugins, "./${name}/index.ts"]
     then start the server: npx mediagate start`,
    `Call it with the API key the first start prints:
       curl -X POST http://localhost:3000/api/v1/partner/${name} \\
         -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" -d '{"text": "hello"}'`,
    `Make it yours: ${name}/operations.ts holds the handler, ${name}/input.ts its body; mediagate's
     docs/writing-a-plugin.md shows prices, jobs, configuration and capabilities.`,
  ];
  return steps.map((s, i) => `  ${i + 1}. ${s}`).join("\n");
}

const USAGE = `mediagate new-plugin <name>

  Scaffolds the plugin folder <name>/ in the working directory: index.ts (the declaration), input.ts,
  errors.ts, operations.ts (one free operation at POST /<name>), <name>.test.ts and README.md.
  <name>: lowercase letters, digits and single dashes, starting with a letter (e.g. word-count).`;

export function main(argv: readonly string[], parent: string = process.cwd()): number {
  if (argv[0] === "--help" || argv[0] === "-h") {
    console.log(USAGE);
    return 0;
  }
  if (argv.length > 1) {
    console.error(`error: new-plugin takes one name (got ${argv.length} arguments)\n\n${USAGE}`);
    return 2;
  }
  const name = argv[0];
  try {
    const files = scaffoldPlugin(name ?? "", parent);
    console.log(
      `Created ${resolve(parent, name!)}/ with ${files.join(", ")}.\n\nNext steps:\n${nextSteps(name!, parent)}`,
    );
    return 0;
  } catch (err) {
    if (!(err instanceof ScaffoldError)) throw err;
    console.error(`error: ${err.message}`);
    return 2;
  }
}

if (process.argv[1]?.endsWith("cli/new-plugin.ts")) process.exit(main(process.argv.slice(2)));
