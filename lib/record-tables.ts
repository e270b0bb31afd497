// A plugin's tables declared once, column by column in SQL, giving both the migration that creates them and
// the row types kysely takes. A column's type is read from its declaration's words, so the two cannot
// disagree: the first word gives the value (`text` a string, `integer` a number, `timestamptz` a Date,
// `boolean`, `jsonb` the type given to `json<T>()`), `not null` or `primary key` makes it non-null, and a
// `default` (or `bigserial`) lets an insert leave it out.
import type { ColumnType } from "kysely";
import type { Migration } from "../contracts/migration.ts";

declare const jsonValue: unique symbol;

/** A `jsonb` column's declaration carrying the type its value is read back as (`json<string[]>()("jsonb not null")`). */
export type JsonColumn<T, S extends string = string> = S & { readonly [jsonValue]: T };

/** Declares a `jsonb` column whose value reads back as `T`. */
export const json =
  <T>() =>
  <const S extends `jsonb${string}`>(declaration: S): JsonColumn<T, S> =>
    declaration as JsonColumn<T, S>;

type NumberWord = "integer" | "smallint" | "bigint" | "bigserial" | "double precision";

/** What a column's value reads back as, from its declaration's first word. */
type ValueOf<S> =
  S extends JsonColumn<infer T>
    ? T
    : S extends `text${string}`
      ? string
      : S extends `${NumberWord}${string}`
        ? number
        : S extends `boolean${string}`
          ? boolean
          : S extends `timestamptz${string}`
            ? Date
            : unknown;

type Required<S> = S extends `${string}not null${string}` | `${string}primary key${string}` ? true : false;
type Defaulted<S> = S extends `${string} default ${string}` | `bigserial${string}` ? true : false;

/** What a column takes when written: a timestamp also as text, a JSON value also as its JSON text. */
type Written<S> = S extends JsonColumn<infer T> ? T | string : ValueOf<S> extends Date ? Date | string : ValueOf<S>;

/** A column's kysely type, from its SQL declaration. */
export type ColumnOf<S> =
  Required<S> extends true
    ? ColumnType<ValueOf<S>, Written<S> | (Defaulted<S> extends true ? undefined : never), Written<S>>
    : ColumnType<ValueOf<S> | null, Written<S> | null | undefined, Written<S> | null>;

/** One table: its columns' SQL, table constraints, and indexes by name suffix (`<table>_<suffix>`). */
export interface TableDeclaration {
  columns: Readonly<Record<string, string>>;
  /** Constraints over several columns (`unique (partner_id, open_slot)`). */
  constraints?: readonly string[];
  /** `partner_newest: "(partner_id, id desc)"`; a leading `unique` makes a unique index. */
  indexes?: Readonly<Record<string, string>>;
}

/** A table's row type, as kysely takes it, from its declaration. */
export type RowOf<T extends TableDeclaration> = { -readonly [K in keyof T["columns"]]: ColumnOf<T["columns"][K]> };

/** The row types of declared tables, by table name: a plugin's `Kysely<TablesOf<typeof tables>>`. */
export type TablesOf<T extends Readonly<Record<string, TableDeclaration>>> = { -readonly [K in keyof T]: RowOf<T[K]> };

/** Tables declared for a migration; the declaration's literal types are kept for `TablesOf`. */
export const defineTables = <const T extends Readonly<Record<string, TableDeclaration>>>(tables: T): T => tables;

function createStatements(name: string, table: TableDeclaration): string[] {
  const lines = [
    ...Object.entries(table.columns).map(([column, declaration]) => `${column} ${declaration}`),
    ...(table.constraints ?? []),
  ];
  const indexes = Object.entries(table.indexes ?? {}).map(([suffix, index]) => {
    const unique = index.startsWith("unique ");
    return `create ${unique ? "unique " : ""}index ${name}_${suffix} on ${name} ${unique ? index.slice("unique ".length) : index}`;
  });
  return [`create table ${name} (\n  ${lines.join(",\n  ")}\n)`, ...indexes];
}

/** The migration creating the tables, in declaration order (a table referenced by another comes first). */
export function tablesMigration(name: string, tables: Readonly<Record<string, TableDeclaration>>): Migration {
  return {
    name,
    statements: Object.entries(tables).flatMap(([table, declaration]) => createStatements(table, declaration)),
  };
}
