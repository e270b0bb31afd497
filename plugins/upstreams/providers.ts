// The gateway's providers (issue 39 items 4-6): for each capability, what a request becomes for an upstream
// (placeholder values and the default input a route's template is merged over) and what a result becomes for
// the area (intake.ts); one UpstreamProvider per protocol route (submit = input -> client.submit; poll =
// client.poll, on done the output URLs taken in; cancel = client.cancel); a sandbox route is the displaced
// sandbox's provider; the routes of a model are chained by routes.ts.
import type {
  CapabilityHost,
  GeneratedImage,
  GeneratedVideo,
  ImageGenerationRequest,
  MusicExtensionRequest,
  MusicGenerationRequest,
  MusicTrack,
  OmniGenerationRequest,
  UpstreamHandle,
  UpstreamPoll,
  UpstreamProvider,
  VideoGenerationRequest,
} from "mediagate/plugin";
import { falClient } from "./fal/client.ts";
import { type IntakeDeps, intakeImage, intakeMusic, intakeVideo, UpstreamOutputError } from "./intake.ts";
import { buildInput, type PlaceholderValues, readOutputPath } from "./placeholders.ts";
import type { ProtocolClient, ProtocolClientFactory, ProtocolName } from "./protocol.ts";
import type { ProvidersSetup, RouteEntry } from "./providers-file.ts";
import { type ReferenceDeps, type ReferenceSource, referenceLinks } from "./references.ts";
import { replicateClient } from "./replicate/client.ts";

/** The one table of protocol clients: a providers file's `protocol` to the factory of its client. */
export const PROTOCOL_CLIENTS: Record<ProtocolName, ProtocolClientFactory> = {
  fal: falClient,
  replicate: replicateClient,
};

/** What the gateway needs to know of one capability's requests and results. */
export interface Adapter<Request, Result> {
  /** The placeholder values of a request; `ref` turns a reference into the URL the service fetches. */
  values(request: Request, ref: (source: ReferenceSource) => Promise<string>): Promise<PlaceholderValues>;
  /** The input a route without `input` sends; a route's `input` is merged over it. */
  defaults: Record<string, unknown>;
  /** What intake reads at poll time, kept with the handle in job_waits: small, no media, no secret. */
  keep(request: Request): Record<string, unknown>;
  /** The result from the upstream's output URLs (downloaded, checked, converted: intake.ts). */
  intake(
    deps: IntakeDeps,
    urls: string[],
    kept: any,
    signal: AbortSignal,
    onProgress: (f: number) => void | Promise<void>,
  ): Promise<Result>;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const aspectRatio = (w: number, h: number) => `${w / gcd(w, h)}:${h / gcd(w, h)}`;
const resolution = (w: number, h: number) => {
  const short = Math.min(w, h);
  return short <= 720 ? "720p" : short <= 1080 ? "1080p" : "4K";
};
const imageQuality = (w: number, h: number) => {
  const long = Math.max(w, h);
  return long <= 1024 ? "1K" : long <= 2048 ? "2K" : "4K";
};
const size = (w: number, h: number) => ({
  width: w,
  height: h,
  aspect_ratio: aspectRatio(w, h),
});
const first = <T>(list: readonly T[]) => (list.length ? list[0] : undefined);

function firstUrl(urls: string[]): string {
  const url = urls[0];
  if (!url) throw new UpstreamOutputError("the upstream's result names no media");
  return url;
}

/** The URLs of references, in order (references.ts: bytes and uploads as short-lived signed links, URLs as given). */
const urlsOf = (refs: readonly ReferenceSource[], ref: (source: ReferenceSource) => Promise<string>) =>
  Promise.all(refs.map(ref));
const maybe = async (source: ReferenceSource | null | undefined, ref: (source: ReferenceSource) => Promise<string>) =>
  source ? ref(source) : undefined;
const listOrNone = (urls: string[]) => (urls.length ? urls : undefined);

export const imageAdapter: Adapter<ImageGenerationRequest, GeneratedImage> = {
  async values(r, ref) {
    const images = await urlsOf(r.references, ref);
    return {
      prompt: r.prompt,
      model: r.model,
      ...size(r.width, r.height),
      quality: imageQuality(r.width, r.height),
      background: r.background,
      seed: r.index,
      image_urls: listOrNone(images),
      image_url: first(images),
    };
  },
  defaults: {
    prompt: "{prompt}",
    width: "{width}",
    height: "{height}",
    aspect_ratio: "{aspect_ratio}",
    image_urls: "{image_urls}",
  },
  keep: (r) => ({ width: r.width, height: r.height }),
  intake: (deps, urls, r, signal, onProgress) =>
    intakeImage(deps, firstUrl(urls), { width: r.width, height: r.height, signal, onProgress }),
};

export const videoAdapter: Adapter<VideoGenerationRequest, GeneratedVideo> = {
  async values(r, ref) {
    const start = await maybe(r.startFrame, ref);
    const images = await urlsOf(r.referenceImages, ref);
    const videos = await urlsOf(r.referenceVideos, ref);
    const audio = await urlsOf(r.referenceAudio, ref);
    return {
      prompt: r.prompt,
      negative_prompt: r.negativePrompt ?? undefined,
      model: r.model,
      ...size(r.width, r.height),
      resolution: resolution(r.width, r.height),
      duration: r.seconds,
      seconds: r.seconds,
      audio: r.sound,
      image_url: start ?? first(images),
      image_urls: listOrNone(start ? [start, ...images] : images),
      end_image_url: await maybe(r.endFrame, ref),
      video_url: first(videos),
      video_urls: listOrNone(videos),
      audio_url: first(audio),
    };
  },
  defaults: {
    prompt: "{prompt}",
    negative_prompt: "{negative_prompt}",
    aspect_ratio: "{aspect_ratio}",
    duration: "{duration}",
    resolution: "{resolution}",
    generate_audio: "{audio}",
    image_url: "{image_url}",
    end_image_url: "{end_image_url}",
    video_url: "{video_url}",
  },
  keep: (r) => ({ width: r.width, height: r.height, seconds: r.seconds, sound: r.sound }),
  intake: (deps, urls, r, signal, onProgress) =>
    intakeVideo(deps, firstUrl(urls), {
      width: r.width,
      height: r.height,
      seconds: r.seconds,
      sound: r.sound,
      signal,
      onProgress,
    }),
};

export const omniAdapter: Adapter<OmniGenerationRequest, GeneratedVideo> = {
  async values(r, ref) {
    const images = await urlsOf([...r.characters.map((c) => c.image), ...r.referenceImages], ref);
    return {
      prompt: r.prompt,
      model: r.model,
      ...size(r.width, r.height),
      resolution: resolution(r.width, r.height),
      duration: r.seconds,
      seconds: r.seconds,
      seed: r.seed ?? undefined,
      image_url: (await maybe(r.firstFrame, ref)) ?? first(images),
      image_urls: listOrNone(images),
      end_image_url: await maybe(r.lastFrame, ref),
      video_url: await maybe(r.referenceVideo, ref),
    };
  },
  defaults: {
    prompt: "{prompt}",
    aspect_ratio: "{aspect_ratio}",
    duration: "{duration}",
    resolution: "{resolution}",
    seed: "{seed}",
    image_url: "{image_url}",
    end_image_url: "{end_image_url}",
    image_urls: "{image_urls}",
    video_url: "{video_url}",
  },
  keep: (r) => ({ width: r.width, height: r.height, seconds: r.seconds }),
  intake: (deps, urls, r, signal, onProgress) =>
    intakeVideo(deps, firstUrl(urls), {
      width: r.width,
      height: r.height,
      seconds: r.seconds,
      sound: true,
      signal,
      onProgress,
    }),
};

async function intakeTracks(
  deps: IntakeDeps,
  urls: string[],
  title: string,
  signal: AbortSignal,
  onProgress: (f: number) => void | Promise<void>,
  minSeconds?: number,
): Promise<MusicTrack[]> {
  firstUrl(urls);
  const tracks: MusicTrack[] = [];
  for (const [i, audioUrl] of urls.entries())
    tracks.push(
      await intakeMusic(deps, {
        audioUrl,
        title,
        signal,
        ...(minSeconds !== undefined ? { minSeconds } : {}),
        onProgress: (f) => onProgress((i + f) / urls.length),
      }),
    );
  return tracks;
}

const songTitle = (title: string | null, prompt: string) => title ?? (prompt.slice(0, 80) || "Untitled");

export const musicAdapter: Adapter<MusicGenerationRequest, MusicTrack[]> = {
  values: async (r) => ({
    prompt: r.prompt,
    model: r.model,
    style: r.style ?? undefined,
    title: r.title ?? undefined,
    instrumental: r.instrumental,
  }),
  defaults: { prompt: "{prompt}", style: "{style}", title: "{title}", instrumental: "{instrumental}" },
  keep: (r) => ({ title: songTitle(r.title, r.prompt) }),
  intake: (deps, urls, r, signal, onProgress) => intakeTracks(deps, urls, r.title, signal, onProgress),
};

export const musicExtensionAdapter: Adapter<MusicExtensionRequest, MusicTrack[]> = {
  values: async (r, ref) => ({
    prompt: r.prompt,
    model: r.model,
    style: r.style || undefined,
    title: r.title || undefined,
    instrumental: r.instrumental,
    continue_at: r.continueAt,
    audio_url: await ref({ bytes: r.source.bytes }),
  }),
  defaults: {
    prompt: "{prompt}",
    style: "{style}",
    title: "{title}",
    instrumental: "{instrumental}",
    continue_at: "{continue_at}",
    audio_url: "{audio_url}",
  },
  keep: (r) => ({ title: songTitle(r.title || r.source.title, r.prompt), continueAt: r.continueAt }),
  intake: (deps, urls, r, signal, onProgress) => intakeTracks(deps, urls, r.title, signal, onProgress, r.continueAt),
};

/** The protocol clients of a providers file, one per provider (built once: a client may cache its key set). */
export function protocolClients(setup: ProvidersSetup, host: Pick<CapabilityHost, "capability">) {
  const clients = new Map<string, ProtocolClient>();
  for (const p of Object.values(setup.providers)) {
    if (p.protocol === "sandbox") continue;
    const secret = setup.secrets[p.name];
    if (!secret) continue;
    clients.set(
      p.name,
      PROTOCOL_CLIENTS[p.protocol]({
        baseUrl: p.baseUrl,
        key: secret.key,
        outbound: host.capability("outbound"),
        ...(secret.webhookSecret ? { webhookSecret: secret.webhookSecret } : {}),
        ...(p.jwksUrl ? { jwksUrl: p.jwksUrl } : {}),
      }),
    );
  }
  return clients;
}

/** One protocol route of a model as an UpstreamProvider (its name is the chain's: routes.ts names the wait). */
export function protocolRoute<Request, Result>(options: {
  name: string;
  client: ProtocolClient;
  route: RouteEntry;
  adapter: Adapter<Request, Result>;
  intakeDeps: () => IntakeDeps;
  referenceDeps: () => ReferenceDeps;
}): UpstreamProvider<Request, Result> {
  const { client, route, adapter } = options;
  const releaseRefs = (handle: UpstreamHandle) =>
    referenceLinks(options.referenceDeps()).release((handle.data?.refs as string[] | undefined) ?? []);
  return {
    name: options.name,
    async submit(request, submitOptions) {
      const links = referenceLinks(options.referenceDeps());
      const refs: Array<string | null> = [];
      const ref = async (source: ReferenceSource) => {
        const prepared = await links.prepare(source);
        refs.push(prepared.key);
        return prepared.url;
      };
      let handle: Awaited<ReturnType<ProtocolClient["submit"]>>;
      try {
        const input = buildInput(adapter.defaults, route.input, await adapter.values(request, ref));
        handle = await client.submit({
          model: route.model!,
          input,
          idempotencyKey: submitOptions.idempotencyKey,
          ...(submitOptions.callback ? { webhookUrl: submitOptions.callback.url } : {}),
          signal: submitOptions.signal,
        });
      } catch (err) {
        await links.release(refs); // nothing took them: a next route stores its own
        throw err;
      }
      // What intake needs at poll time travels with the handle (no media, no secret: sizes, texts, our keys).
      return {
        id: handle.id,
        data: { upstream: handle.data, kept: adapter.keep(request), refs: refs.filter((k) => k !== null) },
      };
    },
    async poll(handle: UpstreamHandle, pollOptions): Promise<UpstreamPoll<Result>> {
      const data = handle.data as { upstream: Record<string, string>; kept: Record<string, unknown> };
      const look = await client.poll({ id: handle.id, data: data.upstream }, pollOptions.signal);
      if (look.state === "pending")
        return {
          state: "pending",
          ...(look.progress !== undefined ? { progress: look.progress } : {}),
          ...(look.message !== undefined ? { message: look.message } : {}),
          ...(look.pollAfterMs !== undefined ? { pollAfterMs: look.pollAfterMs } : {}),
        };
      if (look.state === "failed") return { state: "failed", error: look.error };
      const urls = route.output ? readOutputPath(look.output, route.output) : client.outputUrls(look.output);
      try {
        const result = await adapter.intake(options.intakeDeps(), urls, data.kept, pollOptions.signal, (f) =>
          pollOptions.onProgress(f),
        );
        return { state: "done", result };
      } catch (err) {
        if (err instanceof UpstreamOutputError) return { state: "failed", error: err };
        throw err; // IntakeDownloadError and the like: looked at again
      }
    },
    async cancel(handle) {
      const data = handle.data as { upstream: Record<string, string> };
      await client.cancel({ id: handle.id, data: data.upstream });
      await releaseRefs(handle);
    },
    // The job is over (kept or failed): the references' files may go now; the sweeper removes what is left.
    release: releaseRefs,
    verifyCallback: (request) => client.verifyWebhook(request),
  };
}
