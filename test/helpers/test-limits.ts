// The rate limits of a test-only plugin's routes: generous (1000 a minute each), so that no test meets them.
import type { PluginDeclaration } from "../../core/plugin.ts";

export function generousLimits(...routes: string[]): NonNullable<PluginDeclaration["rateLimits"]> {
  return Object.fromEntries(routes.map((route) => [route, [{ limit: 1000, windowSeconds: 60 }]]));
}
