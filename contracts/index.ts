// Capability contracts: what plugins provide and use, as interfaces, in one place. A consumer asks
// `ctx.capability("image.generate")` and gets `ImageProviders` without a type argument and without importing the
// plugin that provides it. Each contract file adds its names to `CapabilityMap` by declaration merging; a third
// party's plugin adds its own the same way:
//
//   declare module "mediagate/plugin" {
//     interface CapabilityMap { "text.stats": TextStats }
//   }

/** Every capability name a plugin may require or provide, with the interface it answers. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface CapabilityMap {}

/** A name of the map. */
export type CapabilityName = keyof CapabilityMap & string;

/**
 * Named collections several plugins contribute to (`contributes` in definePlugin; read with
 * `ctx.contributions(name)`, every contribution in registration order). Where a capability has exactly one
 * provider, a collection has any number of contributors, none included. Extended by declaration merging, as
 * `CapabilityMap` is.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ContributionMap {}

/** A name of the collections map. */
export type ContributionName = keyof ContributionMap & string;

export * from "./analysis.ts";
export * from "./errors.ts";
export * from "./image.ts";
export * from "./kernel.ts";
export * from "./music.ts";
export * from "./omni.ts";
export * from "./records.ts";
export * from "./social.ts";
export * from "./speech.ts";
export * from "./text.ts";
export * from "./upstream.ts";
export * from "./video.ts";
