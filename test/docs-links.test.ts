// Every relative link of README.md and docs/ resolves: the file it names exists, and an anchor (`page.md#part`)
// names a heading of that page, as GitHub spells heading anchors. Links in code blocks are not links.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";

const ROOT = resolve(import.meta.dirname!, "..");

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

/** The text outside fenced code blocks and inline code spans. */
export function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
    .matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = anchorOf(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The targets of inline links and images: `[text](target)`, a title after the target ignored. */
export function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** What is wrong with one link of `file`, or null. */
function brokenLink(file: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto: and the like: not checked here
  const [path, anchor] = target.split("#", 2) as [string, string | undefined];
  const destination = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(destination)) return `${target}: no such file`;
  if (
    anchor !== undefined &&
    destination.endsWith(".md") &&
    !anchorsOf(readFileSync(destination, "utf8")).has(anchor)
  ) {
    return `${target}: no heading with that anchor`;
  }
  return null;
}

test("every relative link in README.md and docs/ resolves", () => {
  const files = [join(ROOT, "README.md"), ...markdownFiles(join(ROOT, "docs"))];
  const broken = files.flatMap((file) =>
    linkTargets(readFileSync(file, "utf8")).flatMap((target) => {
      const problem = brokenLink(file, target);
      return problem ? [`${relative(ROOT, file)}: ${problem}`] : [];
    }),
  );
  assert.equal(broken, []);
  assert.ok(files.length > 10, "the docs are found");
});

test("the link reader: inline links outside code, GitHub's anchors", () => {
  const md = [
    "# A `b` title!",
    "## Same",
    "## Same",
    '[x](a.md) ![i](img.png "t") `[no](code.md)`',
    "```",
    "[no](fenced.md)",
    "```",
    "[y](https://e.org)",
  ].join("\n");
  assert.equal(linkTargets(md), ["a.md", "img.png", "https://e.org"]);
  assert.equal([...anchorsOf(md)], ["a-b-title", "same", "same-1"]);
  assert.is(anchorOf("2026-11-27: the lanes' turn budget"), "2026-11-27-the-lanes-turn-budget");
});

test.run();
