// The Standard Schema interface (standardschema.dev), declared here so the kernel depends on the contract,
// not on a validation library: zod 4 and valibot values both satisfy it.
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | {
      readonly issues: ReadonlyArray<{
        readonly message: string;
        readonly path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
      }>;
    };

export type InferOutput<S> = S extends StandardSchemaV1<any, infer O> ? O : never;

/** Validates and returns the value, or the message of the first issue: the spec's error text. */
export async function validate<S extends StandardSchemaV1>(
  schema: S,
  value: unknown,
): Promise<{ ok: true; value: InferOutput<S> } | { ok: false; message: string }> {
  const result = await schema["~standard"].validate(value);
  if (result.issues) return { ok: false, message: result.issues[0]?.message ?? "Invalid request" };
  return { ok: true, value: result.value as InferOutput<S> };
}
