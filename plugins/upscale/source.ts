// Reading an upscale source before any charge: a media URL of this service is read from storage (spec: "a
// service image URL is read from storage"), anything else is fetched through the outbound guard with the
// size and time caps of its kind. Every failure is the spec's 400 or 413 for that kind, mapped by the shared
// readSource of the plugin API; a link of ours with no file behind it is as unreadable as a dead external one.
export { readSource, type ReadSourceDeps as SourceDeps, type ReadSourceRules as SourceRules } from "mediagate/plugin";
