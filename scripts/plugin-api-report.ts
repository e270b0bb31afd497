// Writes docs/plugin-api.md, the API report of `mediagate/plugin` (core/plugin-api.ts): every exported name, its
// kind and its signature or declared type as the TypeScript checker prints it, by group (the `// ## Title`
// comments of core/plugin-api.ts) and name. Run `npx tsx scripts/plugin-api-report.ts` after changing what
// plugins compile against, and review the diff: test/plugin-api/report.test.ts regenerates the report in memory
// and fails when it differs from the committed file, so every change of the contract is a reviewed diff.
//
// The report is deterministic: one program rooted at core/plugin-api.ts alone (a plugin's own declaration
// merging never leaks in), the checker's output walked in the file's order, names sorted by code point, no
// dates and no absolute paths.
import { writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import ts from "typescript";
import { PLUGIN_API_VERSION } from "../core/plugin-version.ts";

const ROOT = resolve(import.meta.dirname!, "..");
export const ENTRY = join(ROOT, "core", "plugin-api.ts");
export const REPORT = join(ROOT, "docs", "plugin-api.md");
export const REGENERATE = "npx tsx scripts/plugin-api-report.ts";

export type ExportKind = "function" | "class" | "const" | "interface" | "type" | "enum" | "namespace";

export interface ApiGroup {
  title: string;
  description: string;
  names: string[];
}

export interface ApiName {
  name: string;
  group: string;
  kinds: ExportKind[];
  /** True when the name carries a value (a function, class, const or enum), not only a type. */
  value: boolean;
  /** The declaration as the checker prints it, one or more lines. */
  text: string;
}

export interface PluginApi {
  version: string;
  groups: ApiGroup[];
  names: ApiName[];
}

const TYPE_FLAGS =
  ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.MultilineObjectLiterals | ts.NodeBuilderFlags.IgnoreErrors;

/** The compiler options of tsconfig.json, so the report sees the types `tsc --noEmit -p .` sees. */
function compilerOptions(): ts.CompilerOptions {
  const file = join(ROOT, "tsconfig.json");
  const host: ts.ParseConfigFileHost = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  };
  const parsed = ts.getParsedCommandLineOfConfigFile(file, {}, host);
  if (!parsed) throw new Error(`cannot read ${file}`);
  return parsed.options;
}

/** The `// ## Title` groups of the entry and the names each exports, in the file's order; `export *` is refused. */
function readGroups(source: ts.SourceFile): ApiGroup[] {
  const groups: ApiGroup[] = [];
  const text = source.getFullText();
  for (const statement of source.statements) {
    // One `//` line is one comment range: the lines from a `## Title` line to the statement are its group's.
    const lines = (ts.getLeadingCommentRanges(text, statement.getFullStart()) ?? [])
      .filter((range) => range.kind === ts.SyntaxKind.SingleLineCommentTrivia)
      .map((range) => text.slice(range.pos, range.end).replace(/^\/\/ ?/, ""));
    const at = lines.findLastIndex((line) => line.startsWith("## "));
    if (at >= 0) {
      groups.push({
        title: lines[at]!.slice(3).trim(),
        description: lines
          .slice(at + 1)
          .join(" ")
          .replace(/\s+/g, " ")
          .trim(),
        names: [],
      });
    }
    if (!ts.isExportDeclaration(statement)) {
      if (hasExportModifier(statement))
        throw new Error(`${where(source, statement)}: declare nothing here, re-export it`);
      continue;
    }
    if (!statement.exportClause || !ts.isNamedExports(statement.exportClause)) {
      throw new Error(`${where(source, statement)}: \`export *\` hands plugins whatever a module exports; name each`);
    }
    const group = groups.at(-1);
    if (!group) throw new Error(`${where(source, statement)}: an export before the first \`// ## Title\` group`);
    for (const specifier of statement.exportClause.elements) group.names.push(specifier.name.text);
  }
  return groups;
}

function hasExportModifier(node: ts.Statement): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

function where(source: ts.SourceFile, node: ts.Node): string {
  const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
  return `${relative(ROOT, source.fileName)}:${line + 1}`;
}

/** Reads the plugin API: its groups and every name's kind and printed declaration. */
export function readPluginApi(): PluginApi {
  const program = ts.createProgram({ rootNames: [ENTRY], options: compilerOptions() });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(ENTRY);
  if (!source) throw new Error(`cannot read ${ENTRY}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`${ENTRY} is not a module`);
  const groups = readGroups(source);
  const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
  const scratch = ts.createSourceFile("report.ts", "", ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const print = (node: ts.Node) => printer.printNode(ts.EmitHint.Unspecified, node, scratch);
  const typeText = (type: ts.Type, flags = 0) => {
    const node = checker.typeToTypeNode(type, undefined, TYPE_FLAGS | flags);
    return node ? print(node) : checker.typeToString(type, source, ts.TypeFormatFlags.NoTruncation);
  };

  const exported = new Map(checker.getExportsOfModule(moduleSymbol).map((s) => [s.name, s]));
  const names: ApiName[] = [];
  for (const group of groups) {
    for (const name of group.names) {
      const symbol = exported.get(name);
      if (!symbol) throw new Error(`${name} is listed in ${relative(ROOT, ENTRY)} but not exported`);
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const typeOnly = (symbol.declarations ?? []).some((d) => ts.isTypeOnlyExportDeclaration(d));
      const { kinds, parts } = describe(target, name, typeOnly);
      names.push({
        name,
        group: group.title,
        kinds,
        value: kinds.some((k) => k === "function" || k === "class" || k === "const" || k === "enum"),
        text: parts.join("\n"),
      });
    }
  }
  const listed = new Set(names.map((n) => n.name));
  const unlisted = [...exported.keys()].filter((n) => !listed.has(n));
  if (unlisted.length > 0) throw new Error(`exported outside the groups: ${unlisted.join(", ")}`);
  return { version: PLUGIN_API_VERSION, groups, names };

  function describe(symbol: ts.Symbol, name: string, typeOnly: boolean): { kinds: ExportKind[]; parts: string[] } {
    const kinds: ExportKind[] = [];
    const parts: string[] = [];
    const f = symbol.flags;
    if (!typeOnly && f & ts.SymbolFlags.Function) {
      kinds.push("function");
      for (const signature of checker.getTypeOfSymbol(symbol).getCallSignatures()) {
        parts.push(`function ${name}${signatureText(signature)};`);
      }
    }
    if (f & ts.SymbolFlags.Class) {
      kinds.push("class");
      parts.push(classText(symbol, name));
    }
    if (!typeOnly && f & ts.SymbolFlags.Variable) {
      kinds.push("const");
      const declaration = symbol.valueDeclaration;
      const keyword =
        declaration && ts.isVariableDeclaration(declaration) && ts.isVariableDeclarationList(declaration.parent)
          ? declaration.parent.flags & ts.NodeFlags.Const
            ? "const"
            : "let"
          : "const";
      parts.push(`${keyword} ${name}: ${typeText(checker.getTypeOfSymbol(symbol))};`);
    }
    if (f & ts.SymbolFlags.Enum) {
      kinds.push("enum");
      parts.push(`enum ${name} ${typeText(checker.getTypeOfSymbol(symbol))}`);
    }
    if (f & ts.SymbolFlags.Interface && !(f & ts.SymbolFlags.Class)) {
      kinds.push("interface");
      parts.push(interfaceText(symbol, name));
    }
    if (f & ts.SymbolFlags.TypeAlias) {
      kinds.push("type");
      const declaration = symbol.declarations?.find(ts.isTypeAliasDeclaration);
      const params = declaration ? typeParametersText(declaration.typeParameters) : "";
      const declared = checker.getDeclaredTypeOfSymbol(symbol);
      parts.push(`type ${name}${params} = ${typeText(declared, ts.NodeBuilderFlags.InTypeAlias)};`);
    }
    if (f & (ts.SymbolFlags.ValueModule | ts.SymbolFlags.NamespaceModule) && kinds.length === 0) {
      kinds.push("namespace");
      parts.push(`namespace ${name}`);
    }
    if (kinds.length === 0) throw new Error(`${name}: a kind the report does not know (symbol flags ${f})`);
    return { kinds, parts };
  }

  /** A signature's parts as the checker prints them: `<T>`, `(a: A)` and `: R`. */
  function signatureParts(signature: ts.Signature): { typeParams: string; params: string; returns: string } {
    const node = checker.signatureToSignatureDeclaration(signature, ts.SyntaxKind.FunctionType, undefined, TYPE_FLAGS);
    if (!node) throw new Error(`cannot print ${checker.signatureToString(signature)}`);
    return {
      typeParams: node.typeParameters ? `<${node.typeParameters.map(print).join(", ")}>` : "",
      params: `(${node.parameters.map(print).join(", ")})`,
      returns: node.type ? `: ${print(node.type)}` : "",
    };
  }

  function signatureText(signature: ts.Signature): string {
    const { typeParams, params, returns } = signatureParts(signature);
    return `${typeParams}${params}${returns}`;
  }

  function typeParametersText(params: ts.NodeArray<ts.TypeParameterDeclaration> | undefined): string {
    if (!params || params.length === 0) return "";
    return `<${params.map((p) => p.getText().replace(/\s+/g, " ")).join(", ")}>`;
  }

  function memberLines(members: ts.Symbol[], isStatic: boolean): string[] {
    const lines: string[] = [];
    for (const member of members) {
      const prefix = isStatic ? "static " : "";
      const key = /^[A-Za-z_$][\w$]*$/.test(member.name) ? member.name : JSON.stringify(member.name);
      const declaration = member.valueDeclaration ?? member.declarations?.[0];
      const optional = member.flags & ts.SymbolFlags.Optional ? "?" : "";
      if (member.flags & ts.SymbolFlags.Method) {
        for (const signature of checker.getTypeOfSymbol(member).getCallSignatures()) {
          lines.push(`${prefix}${key}${optional}${signatureText(signature)};`);
        }
        continue;
      }
      const readonly =
        declaration && ts.getCombinedModifierFlags(declaration as ts.Declaration) & ts.ModifierFlags.Readonly
          ? "readonly "
          : "";
      const typeNode =
        declaration && (ts.isPropertySignature(declaration) || ts.isPropertyDeclaration(declaration))
          ? declaration.type
          : undefined;
      const type = typeNode ? checker.getTypeFromTypeNode(typeNode) : checker.getTypeOfSymbol(member);
      lines.push(`${prefix}${readonly}${key}${optional}: ${typeText(type)};`);
    }
    return lines;
  }

  function block(head: string, lines: string[]): string {
    if (lines.length === 0) return `${head} {}`;
    return [`${head} {`, ...lines.map((line) => line.replace(/^/gm, "  ")), "}"].join("\n");
  }

  function heritage(declarations: readonly ts.Declaration[] | undefined, token: ts.SyntaxKind): string[] {
    const out: string[] = [];
    for (const declaration of declarations ?? []) {
      if (!(ts.isInterfaceDeclaration(declaration) || ts.isClassDeclaration(declaration))) continue;
      for (const clause of declaration.heritageClauses ?? []) {
        if (clause.token !== token) continue;
        for (const t of clause.types) out.push(typeText(checker.getTypeAtLocation(t)));
      }
    }
    return [...new Set(out)];
  }

  function interfaceText(symbol: ts.Symbol, name: string): string {
    const declaration = symbol.declarations?.find(ts.isInterfaceDeclaration);
    const params = typeParametersText(declaration?.typeParameters);
    const bases = heritage(symbol.declarations, ts.SyntaxKind.ExtendsKeyword);
    const type = checker.getDeclaredTypeOfSymbol(symbol);
    const lines = [
      ...type.getCallSignatures().map((s) => `${signatureText(s)};`),
      ...type.getConstructSignatures().map((s) => `new ${signatureText(s)};`),
      ...checker.getIndexInfosOfType(type).map((info) => {
        const readonly = info.isReadonly ? "readonly " : "";
        return `${readonly}[key: ${typeText(info.keyType)}]: ${typeText(info.type)};`;
      }),
      ...memberLines(checker.getPropertiesOfType(type), false),
    ];
    const extendsText = bases.length > 0 ? ` extends ${bases.join(", ")}` : "";
    return block(`interface ${name}${params}${extendsText}`, lines);
  }

  function classText(symbol: ts.Symbol, name: string): string {
    const declaration = symbol.declarations?.find(ts.isClassDeclaration);
    const params = typeParametersText(declaration?.typeParameters);
    const bases = heritage(symbol.declarations, ts.SyntaxKind.ExtendsKeyword);
    const own = (member: ts.Symbol) =>
      (member.declarations ?? []).some(
        (d) =>
          (d.parent === declaration || (ts.isParameter(d) && d.parent.parent === declaration)) &&
          !(ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) &&
          !member.name.startsWith("__#") &&
          !member.name.startsWith("#"),
      );
    const staticSide = checker.getTypeOfSymbol(symbol);
    const instance = checker.getDeclaredTypeOfSymbol(symbol);
    const constructors = declaration?.members.some(ts.isConstructorDeclaration)
      ? staticSide.getConstructSignatures().map((s) => `constructor${signatureParts(s).params};`)
      : [];
    const lines = [
      ...constructors,
      ...memberLines(
        staticSide.getProperties().filter((m) => m.name !== "prototype" && own(m)),
        true,
      ),
      ...memberLines(instance.getProperties().filter(own), false),
    ];
    const extendsText = bases.length > 0 ? ` extends ${bases.join(", ")}` : "";
    return block(`class ${name}${params}${extendsText}`, lines);
  }
}

/** Code-point order, case folded first, so the order never depends on the machine's locale. */
function byName(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (x !== y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Prose wrapped at `width` columns, word by word, as the docs are wrapped by hand. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** The report's Markdown text. */
export function pluginApiReport(api: PluginApi = readPluginApi()): string {
  const values = api.names.filter((n) => n.value).length;
  const out: string[] = [
    "# The plugin API (`mediagate/plugin`)",
    "",
    `Plugin API version **${api.version}** (\`PLUGIN_API_VERSION\`, core/plugin-version.ts).`,
    "",
    "Generated from [core/plugin-api.ts](../core/plugin-api.ts) by the TypeScript checker: do not edit it by hand.",
    `After changing what \`mediagate/plugin\` exports, or a type it exports, run \`${REGENERATE}\` and review`,
    "the diff: test/plugin-api/report.test.ts fails while this file differs from what the code exports. A change",
    "that removes or alters a name needs a new major plugin API version, one that only adds a new minor",
    "(core/plugin-version.ts); a plugin says the range it was written for in `apiVersion`.",
    "",
    `${api.names.length} names: ${values} values and ${api.names.length - values} types only, in ${api.groups.length} groups.`,
    "Each name gives its kind and its declaration as the checker prints it (types by their own names, some of",
    "which `mediagate/plugin` does not export: a plugin uses them without naming them).",
    "",
    "## Contents",
    "",
  ];
  for (const group of api.groups) {
    out.push(`- ${group.title} (${group.names.length})`);
  }
  for (const group of api.groups) {
    out.push("", `## ${group.title}`, "", ...wrap(group.description, 115));
    const members = api.names.filter((n) => n.group === group.title).sort((a, b) => byName(a.name, b.name));
    for (const member of members) {
      out.push("", `### \`${member.name}\` (${member.kinds.join(", ")})`, "", "```ts", member.text, "```");
    }
  }
  return `${out.join("\n")}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename!)) {
  const text = pluginApiReport();
  writeFileSync(REPORT, text);
  const lines = text.split("\n").length;
  process.stdout.write(`wrote ${relative(ROOT, REPORT)} (${lines} lines) from ${relative(ROOT, ENTRY)}\n`);
}
