// The providers file (plugins/upstreams/providers-file.ts): checked at boot, before any connection; a bad file
// stops the boot with one line naming the JSON path at fault; keys come from the variables it names. Also the
// one table of spec model ids against the areas' own tables, and the input templates and output paths.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import { MODEL_IDS as IMAGE_MODEL_IDS } from "../../plugins/images/models.ts";
import { defaultPlugins } from "../../plugins/index.ts";
import { OMNI_MODELS } from "../../plugins/omni/prices.ts";
import { buildInput, checkOutputPath, readOutputPath } from "../../plugins/upstreams/placeholders.ts";
import {
  ProvidersFileError,
  parseProvidersFile,
  providersSetup,
  SPEC_MODELS,
  upstreamsConfig,
} from "../../plugins/upstreams/providers-file.ts";
import { MODEL_IDS as VIDEO_MODEL_IDS } from "../../plugins/video/prices.ts";
import { rejection } from "../helpers/assert.ts";

const t = suite("providers file");

const FILE = {
  providers: {
    fal: { protocol: "fal", key_env: "FAL_KEY" },
    replicate: { protocol: "replicate", base_url: "http://127.0.0.1:9/v1/", key_env: "REPLICATE_API_TOKEN" },
  },
  routes: {
    "image-a-pro": [
      { provider: "fal", model: "fal-ai/flux/dev" },
      { provider: "replicate", model: "black-forest-labs/flux-dev" },
    ],
    "gamma-3.1-fast": [{ provider: "replicate", model: "owner/name", input: { resolution: "{resolution}" } }],
    omni: [{ provider: "sandbox" }],
  },
};

/** The problem a file answers, as `path: problem`. */
function problem(file: unknown): string {
  try {
    parseProvidersFile(typeof file === "string" ? file : JSON.stringify(file));
  } catch (err) {
    if (err instanceof ProvidersFileError) return err.message;
    throw err;
  }
  return "accepted";
}

const edit = (f: (file: any) => void) => {
  const file = structuredClone(FILE) as any;
  f(file);
  return file;
};

t("the issue's example file is accepted, with the services' public URLs as defaults", () => {
  const file = parseProvidersFile(JSON.stringify(FILE));
  assert.is(file.providers.fal?.baseUrl, "https://queue.fal.run");
  assert.is(file.providers.replicate?.baseUrl, "http://127.0.0.1:9/v1");
  assert.equal(file.routes.omni, [{ provider: "sandbox" }]);
  assert.is(file.routes["image-a-pro"]?.[1]?.model, "black-forest-labs/flux-dev");
});

t("each mistake is named by its JSON path", () => {
  assert.match(problem("{"), /^\$: is not JSON/);
  assert.is(
    problem(edit((f) => (f.routes["image-a-pro"][1].provider = "nope"))),
    'routes.image-a-pro[1].provider: "nope" is not a provider of this file',
  );
  assert.match(
    problem(edit((f) => (f.routes["image-z"] = [{ provider: "sandbox" }]))),
    /^routes\.image-z: "image-z" is not a model id of the spec/,
  );
  assert.is(
    problem(edit((f) => (f.providers.fal.protocol = "ftp"))),
    "providers.fal.protocol: must be one of fal, replicate, sandbox",
  );
  assert.match(
    problem(edit((f) => delete f.providers.fal.key_env)),
    /^providers\.fal\.key_env: must name an environment variable/,
  );
  assert.match(
    problem(edit((f) => (f.providers.fal.base_url = "https://user:pw@queue.fal.run"))),
    /^providers\.fal\.base_url: /,
  );
  assert.match(problem(edit((f) => (f.providers.fal.keyenv = "X"))), /^providers\.fal\.keyenv: unknown field/);
  assert.is(problem(edit((f) => (f.routes.omni = []))), "routes.omni: must be a non-empty list of routes");
  assert.match(
    problem(edit((f) => delete f.routes["gamma-3.1-fast"][0].model)),
    /^routes\.gamma-3\.1-fast\[0\]\.model: /,
  );
  assert.is(
    problem(edit((f) => (f.routes["gamma-3.1-fast"][0].input = { x: ["{prompt}", "{colour}"] }))),
    "routes.gamma-3.1-fast[0].input.x[1]: unknown placeholder {colour}",
  );
  assert.match(
    problem(edit((f) => (f.routes["gamma-3.1-fast"][0].output = "data..url"))),
    /^routes\.gamma-3\.1-fast\[0\]\.output: /,
  );
  assert.match(problem(edit((f) => (f.routes.omni[0].model = "x"))), /^routes\.omni\[0\]\.model: unknown field/);
});

t("a key variable that is not set stops the boot naming it; keys are read from the environment only", () => {
  const file = parseProvidersFile(JSON.stringify(FILE));
  const err = (() => {
    try {
      providersSetup(file, { FAL_KEY: "fal-secret" });
    } catch (e) {
      return e as Error;
    }
  })();
  assert.instance(err, ConfigError);
  assert.is(err!.message, "PROVIDERS_FILE: providers.replicate.key_env: REPLICATE_API_TOKEN is not set");
  const setup = providersSetup(file, { FAL_KEY: "fal-secret", REPLICATE_API_TOKEN: "r8_secret" });
  assert.equal(setup.secrets, { fal: { key: "fal-secret" }, replicate: { key: "r8_secret" } });
});

t("at boot: a bad file stops createKernel before any connection, in one line", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mg-providers-"));
  const path = join(dir, "providers.json");
  writeFileSync(path, JSON.stringify(edit((f) => (f.routes["image-a-pro"][1].provider = "nope"))));
  // No database URL that answers: the boot must stop before it would try one.
  const env = {
    PROVIDERS_FILE: path,
    DATABASE_URL: "postgres://127.0.0.1:9/none",
    FAL_KEY: "k",
    REPLICATE_API_TOKEN: "k",
  };
  const err = await rejection(createKernel({ config: loadConfig(env), plugins: defaultPlugins }));
  assert.instance(err, ConfigError);
  assert.is(
    err.message,
    `PROVIDERS_FILE at routes.image-a-pro[1].provider: "nope" is not a provider of this file (got "${path}")`,
  );
  assert.not.match(err.message, /\n/);
  writeFileSync(path, JSON.stringify(FILE));
  const missing = await rejection(
    createKernel({ config: loadConfig({ ...env, FAL_KEY: "" }), plugins: defaultPlugins }),
  );
  assert.is(missing.message, "PROVIDERS_FILE: providers.fal.key_env: FAL_KEY is not set");
  const unreadable = await rejection(
    createKernel({ config: loadConfig({ ...env, PROVIDERS_FILE: join(dir, "absent.json") }), plugins: defaultPlugins }),
  );
  assert.match(unreadable.message, /^PROVIDERS_FILE at \$: cannot be read \(ENOENT\)/);
  assert.is(upstreamsConfig.read({}).file, undefined, "unset: no file, nothing read");
});

t("the spec model ids match the areas' own tables", () => {
  assert.equal([...SPEC_MODELS["image.generate"]].sort(), [...IMAGE_MODEL_IDS].sort());
  assert.equal([...SPEC_MODELS["video.generate"]].sort(), [...VIDEO_MODEL_IDS, "animation"].sort());
  assert.equal([...SPEC_MODELS["omni.generate"]], [...OMNI_MODELS]);
  const music: Record<"V5_5" | "V5", true> = { V5_5: true, V5: true }; // MusicModel (contracts/music.ts)
  assert.equal([...SPEC_MODELS["music.generate"]].sort(), Object.keys(music).sort());
});

t("templates: one placeholder keeps the value's JSON type, text is interpolated, a missing value drops its key", () => {
  const input = buildInput(
    { prompt: "{prompt}", width: "{width}", seed: "{seed}", image_urls: "{image_urls}" },
    {
      seed: null,
      size: { w: "{width}", h: "{height}" },
      text: "{prompt} at {resolution}",
      list: ["{image_url}", "{video_url}"],
      audio: "{audio}",
    },
    {
      prompt: "a fox",
      width: 1024,
      height: 768,
      image_urls: ["https://a/1.png"],
      image_url: "https://a/1.png",
      audio: false,
    },
  );
  assert.equal(input, {
    prompt: "a fox",
    width: 1024,
    image_urls: ["https://a/1.png"],
    size: { w: 1024, h: 768 },
    list: ["https://a/1.png"],
    audio: false,
  });
});

t("output paths: dotted with indexes, to a URL, a list of URLs or objects with a url", () => {
  const result = {
    data: { images: [{ url: "https://x/1.png" }, { url: "https://x/2.png" }] },
    output: "https://x/v.mp4",
  };
  assert.equal(readOutputPath(result, "data.images[1].url"), ["https://x/2.png"]);
  assert.equal(readOutputPath(result, "data.images"), ["https://x/1.png", "https://x/2.png"]);
  assert.equal(readOutputPath(result, "output"), ["https://x/v.mp4"]);
  assert.equal(readOutputPath(result, "data.video.url"), []);
  assert.ok(checkOutputPath("output[0]"));
  assert.not.ok(checkOutputPath("a..b"));
  assert.not.ok(checkOutputPath("a[x]"));
});

t.run();
