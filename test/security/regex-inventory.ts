// Every regular expression written in the source, found with the TypeScript compiler's parser: regex literals
// and `RegExp(...)` / `new RegExp(...)` calls whose pattern is a string literal (their flags too when literal).
// A RegExp built from a non-literal pattern is listed apart (it cannot be checked statically).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

export interface FoundRegex {
  /** path relative to the repository, with the 1-based line */
  where: string;
  source: string;
  flags: string;
}

const SKIP = new Set(["node_modules", "test", ".git"]);

function tsFiles(path: string): string[] {
  if (statSync(path).isFile()) return /\.(m|c)?tsx?$/.test(path) ? [path] : [];
  return readdirSync(path)
    .filter((name) => !SKIP.has(name))
    .sort()
    .flatMap((name) => tsFiles(join(path, name)));
}

/** A literal string's value (a plain string or a template without substitutions), else null. */
function literal(node: ts.Node | undefined): string | null {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : null;
}

export function findRegexes(
  root: string,
  roots: readonly string[],
): { found: FoundRegex[]; dynamic: string[]; files: number } {
  const found: FoundRegex[] = [];
  const dynamic: string[] = [];
  const files = roots.flatMap((r) => tsFiles(join(root, r)));
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const sf = ts.createSourceFile(
      file,
      text,
      ts.ScriptTarget.Latest,
      false,
      file.endsWith("x") ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
    );
    const where = (node: ts.Node) =>
      `${relative(root, file)}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
    const visit = (node: ts.Node) => {
      if (ts.isRegularExpressionLiteral(node)) {
        // The literal's text is /source/flags; flags never hold a slash.
        const raw = node.text;
        const cut = raw.lastIndexOf("/");
        found.push({ where: where(node), source: raw.slice(1, cut), flags: raw.slice(cut + 1) });
      } else if (
        (ts.isNewExpression(node) || ts.isCallExpression(node)) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === "RegExp"
      ) {
        const source = literal(node.arguments?.[0]);
        const flagsArg = node.arguments?.[1];
        const flags = flagsArg === undefined ? "" : literal(flagsArg);
        if (source !== null && flags !== null) found.push({ where: where(node), source, flags });
        else dynamic.push(where(node));
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { found, dynamic, files: files.length };
}
