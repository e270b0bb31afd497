// The Pothos builder every part of the GraphQL schema is added to, with the one custom scalar: `JSON`,
// for values whose shape a declaration does not give (free-form objects such as `costs`, operations
// without an `output` schema).
import SchemaBuilder from "@pothos/core";
import { valueFromASTUntyped } from "graphql";
import type { GraphqlContext } from "./context.ts";

export interface GraphqlTypes {
  Context: GraphqlContext;
  Scalars: { JSON: { Input: unknown; Output: unknown } };
}

export type Builder = PothosSchemaTypes.SchemaBuilder<PothosSchemaTypes.ExtendDefaultTypes<GraphqlTypes>>;

export function createBuilder(): Builder {
  const builder = new SchemaBuilder<GraphqlTypes>({});
  builder.scalarType("JSON", {
    description: "Any JSON value, shaped as the REST API's body for the same field.",
    serialize: (value) => value,
    parseValue: (value) => value,
    parseLiteral: (node, variables) => valueFromASTUntyped(node, variables ?? undefined),
  });
  return builder;
}
