// The `espeak-ng` package ships no types; only espeak.worker.mjs loads it, this keeps an accidental
// TypeScript import from being an implicit any.
declare module "espeak-ng" {
  const createESpeak: (options: Record<string, unknown>) => Promise<{
    FS: { readFile(path: string): Uint8Array; writeFile(path: string, data: string | Uint8Array): void };
  }>;
  export default createESpeak;
}
