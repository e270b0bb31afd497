// The gateway behind the `upstreams` plugin's four capabilities: one per kernel, built from PROVIDERS_FILE on
// first use. Each factory hands back what the plugin displaced when there is no file; with one, it builds each
// routed model's chain (routes.ts) of protocol routes (providers.ts) and sandbox routes.
import type {
  CapabilityHost,
  GeneratedImage,
  GeneratedVideo,
  ImageGenerationRequest,
  ImageProviders,
  MusicExtensionRequest,
  MusicGenerationRequest,
  MusicProvider,
  MusicProviders,
  MusicTrack,
  OmniGenerationRequest,
  OmniProvider,
  UpstreamGateway,
  UpstreamProvider,
  VideoGenerationRequest,
  VideoProviders,
} from "mediagate/plugin";
import type { ProtocolClient } from "./protocol.ts";
import {
  type Adapter,
  imageAdapter,
  musicAdapter,
  musicExtensionAdapter,
  omniAdapter,
  protocolClients,
  protocolRoute,
  videoAdapter,
} from "./providers.ts";
import { type GatewayCapability, type ProvidersSetup, SPEC_MODELS, upstreamsConfig } from "./providers-file.ts";
import { referenceDeps } from "./references.ts";
import { chainProvider, type Route, RouteHealth } from "./routes.ts";

/** One gateway per kernel: the four capability factories and the health contribution share its breakers. */
interface Gateway {
  setup: ProvidersSetup;
  health: RouteHealth;
  clients: Map<string, ProtocolClient>;
  /** Every chain by its provider name (callbacks find theirs by it). */
  chains: Map<string, UpstreamProvider<any, any>>;
}

// Keyed by the plugin's config values, one frozen object per kernel: two kernels in one process (tests) never share.
const gateways = new WeakMap<object, Gateway | null>();

function gatewayOf(host: CapabilityHost): Gateway | null {
  let gateway = gateways.get(host.pluginConfig);
  if (gateway === undefined) {
    const setup = upstreamsConfig.of(host).file;
    gateway = setup
      ? { setup, health: new RouteHealth(host.clock), clients: protocolClients(setup, host), chains: new Map() }
      : null;
    if (gateway)
      host.log?.info(
        `upstreams: ${Object.keys(setup!.routes).length} models routed (${Object.keys(setup!.providers).join(", ") || "sandbox only"})`,
      );
    gateways.set(host.pluginConfig, gateway);
  }
  return gateway;
}

const SHORT: Record<GatewayCapability, string> = {
  "image.generate": "image",
  "video.generate": "video",
  "omni.generate": "omni",
  "music.generate": "music",
};

/**
 * The chain of one capability over the given models: each model's routes, protocol routes through their
 * client and sandbox routes to what `sandboxFor(model)` answers.
 */
function chain<Request, Result>(
  gateway: Gateway,
  host: CapabilityHost,
  options: {
    name: string;
    models: readonly string[];
    adapter: Adapter<Request, Result>;
    sandboxFor(model: string): UpstreamProvider<Request, Result> | undefined;
    modelOf(request: Request): string;
  },
): UpstreamProvider<Request, Result> {
  const byModel = new Map<string, Route<Request, Result>[]>();
  const byId = new Map<string, Route<Request, Result>>();
  const intakeDeps = () => ({ outbound: host.capability("outbound"), media: host.capability("media") });
  for (const model of options.models) {
    const entries = gateway.setup.routes[model];
    if (!entries) continue;
    const routes = entries.map((entry, index) => {
      const id = gateway.health.add(model, index, entry.provider);
      const client = gateway.clients.get(entry.provider);
      let provider: UpstreamProvider<Request, Result> | undefined;
      if (client)
        provider = protocolRoute({
          name: options.name,
          client,
          route: entry,
          adapter: options.adapter,
          intakeDeps,
          referenceDeps: () => referenceDeps(host),
        });
      else provider = options.sandboxFor(model);
      if (!provider)
        throw new Error(
          `PROVIDERS_FILE: routes.${model}[${index}] routes to the sandbox, and no sandbox provides ${model}`,
        );
      const route = { id, provider };
      byId.set(id, route);
      return route;
    });
    byModel.set(model, routes);
  }
  const provider = chainProvider<Request, Result>({
    name: options.name,
    health: gateway.health,
    routesOf: (request) => byModel.get(options.modelOf(request)) ?? [],
    byId,
    ...(host.log ? { log: host.log } : {}),
  });
  gateway.chains.set(options.name, provider);
  return provider;
}

/** A route-name lookup over one chain per routed model (images and video ask by spec model id). */
function perModel<Request, Result>(
  gateway: Gateway,
  host: CapabilityHost,
  cap: "image.generate" | "video.generate",
  adapter: Adapter<Request, Result>,
  sandboxFor: (model: string) => UpstreamProvider<Request, Result> | undefined,
): { route(name: string): UpstreamProvider<Request, Result> | undefined } {
  const chains = new Map<string, UpstreamProvider<Request, Result>>();
  for (const model of SPEC_MODELS[cap])
    if (gateway.setup.routes[model])
      chains.set(
        model,
        chain(gateway, host, {
          name: `upstreams.${SHORT[cap]}.${model.toLowerCase()}`,
          models: [model],
          adapter,
          sandboxFor,
          modelOf: () => model,
        }),
      );
  return { route: (name) => chains.get(name) };
}

export function images(host: CapabilityHost): ImageProviders {
  const sandbox = host.replaced("image.generate");
  const gateway = gatewayOf(host);
  if (!gateway) return sandbox ?? { route: () => undefined };
  // The images sandbox names its routes "primary"/"secondary" (its failover demo); by model id it has none.
  return perModel<ImageGenerationRequest, GeneratedImage>(
    gateway,
    host,
    "image.generate",
    imageAdapter,
    (model) => sandbox?.route(model) ?? sandbox?.route("primary"),
  );
}

export function videos(host: CapabilityHost): VideoProviders {
  const sandbox = host.replaced("video.generate");
  const gateway = gatewayOf(host);
  if (!gateway) return sandbox ?? { route: () => undefined };
  return perModel<VideoGenerationRequest, GeneratedVideo>(gateway, host, "video.generate", videoAdapter, (model) =>
    sandbox?.route(model),
  );
}

export function omni(host: CapabilityHost): OmniProvider {
  const sandbox = host.replaced("omni.generate");
  const gateway = gatewayOf(host);
  if (!gateway)
    return (
      sandbox ??
      // Registered without the Omni sandbox and without a file: no provider, as no plugin would give one.
      Object.assign(
        chain<OmniGenerationRequest, GeneratedVideo>(
          {
            setup: { providers: {}, routes: {}, secrets: {} },
            health: new RouteHealth(host.clock),
            clients: new Map(),
            chains: new Map(),
          },
          host,
          {
            name: "upstreams.omni",
            models: [],
            adapter: omniAdapter,
            sandboxFor: () => undefined,
            modelOf: (r) => r.model,
          },
        ),
        { serves: () => false },
      )
    );
  // Omni has one provider for both models: the chain picks the model's routes by the request's model.
  const provider = chain<OmniGenerationRequest, GeneratedVideo>(gateway, host, {
    name: "upstreams.omni",
    models: SPEC_MODELS["omni.generate"],
    adapter: omniAdapter,
    sandboxFor: () => sandbox,
    modelOf: (request) => request.model,
  });
  return Object.assign(provider, { serves: (model: string) => Boolean(gateway.setup.routes[model]) });
}

export function music(host: CapabilityHost): MusicProviders {
  const sandbox = host.replaced("music.generate");
  const gateway = gatewayOf(host);
  if (!gateway) return sandbox ?? { provider: () => undefined };
  const providers = new Map<string, MusicProvider>();
  for (const model of SPEC_MODELS["music.generate"]) {
    if (!gateway.setup.routes[model]) continue;
    const name = `upstreams.music.${model.toLowerCase()}`;
    providers.set(model, {
      generate: chain<MusicGenerationRequest, MusicTrack[]>(gateway, host, {
        name,
        models: [model],
        adapter: musicAdapter,
        sandboxFor: (m) => sandbox?.provider(m as MusicGenerationRequest["model"])?.generate,
        modelOf: () => model,
      }),
      extend: chain<MusicExtensionRequest, MusicTrack[]>(gateway, host, {
        name: `${name}.extend`,
        models: [model],
        adapter: musicExtensionAdapter,
        sandboxFor: (m) => sandbox?.provider(m as MusicGenerationRequest["model"])?.extend,
        modelOf: () => model,
      }),
    });
  }
  return { provider: (model) => providers.get(model) };
}

export function health(host: CapabilityHost): UpstreamGateway {
  return {
    routes: () => gatewayOf(host)?.health.statuses() ?? [],
    callbackProvider: (name) => gatewayOf(host)?.chains.get(name),
  };
}
