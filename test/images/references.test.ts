// Uploaded reference images (`ref_images`) belong to the request that sent them (issue 14 item 8): two
// partners sending the same bytes get keys of their own, and one partner's refused charge removes only its
// own uploads, never the file another partner's job is about to read. Identical references still render
// identical images (the sandbox is seeded by content, not by the stored name).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { notPending, pollStatus } from "../helpers/poll-status.ts";

const PUBLIC_URL = "https://media.example.test";
const ref = (n: number) => ({
  base64: Buffer.from(encodePng(4, 4, new Uint8Array(48).fill(n), 3)).toString("base64"),
  mime_type: "image/png",
});
const keyOf = (url: string) => new URL(url).pathname.slice("/media/".length);

const waitFor = async (tk: TestKernel, key: string, id: number, timeoutMs = 60_000) =>
  (await pollStatus(tk, key, `/image-status/${id}`, notPending, timeoutMs)).body;

/** The uploaded references of the account's newest image, as GET /images lists them. */
async function refUrls(tk: TestKernel, key: string): Promise<string[]> {
  const res = await tk.request("GET", "/images?limit=1", { key });
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.images[0].ref_image_urls;
}

for (const backend of await databaseBackends()) {
  const t = suite(`image references per request on ${backend.name}`);
  // One kernel for the suite: each test has partners of its own and compares the reference files before and
  // after its own requests.
  const tk = suiteKernel(t, backend, {
    plugins: [account, imagesSandbox, images],
    start: true,
    env: { SANDBOX_LATENCY_MS: "5", PUBLIC_URL },
  });

  t(
    "two partners sending the same bytes do not share a key; identical references render identical images",
    async () => {
      const a = await tk.partner({ credits: 100 });
      const b = await tk.partner({ credits: 100 });
      const sent = await Promise.all(
        [a, b].map((p) =>
          tk.request("POST", "/generate-image", { key: p.key, body: { prompt: "same", ref_images: [ref(7)] } }),
        ),
      );
      for (const res of sent) assert.is(res.status, 202, JSON.stringify(res.body));
      const [urlA] = await refUrls(tk, a.key);
      const [urlB] = await refUrls(tk, b.key);
      assert.ok(urlA && urlB);
      assert.is.not(keyOf(urlA!), keyOf(urlB!));
      assert.match(keyOf(urlA!), /^images\/refs\/[0-9a-f]{32}\.png$/);
      const bytes = Buffer.from(ref(7).base64, "base64");
      for (const url of [urlA!, urlB!]) assert.ok(Buffer.from((await tk.kernel.blobs.get(keyOf(url)))!).equals(bytes));

      const images = await Promise.all(
        [a, b].map(async (p, i) => {
          const done = await waitFor(tk, p.key, sent[i]!.body.generation_id);
          assert.is(done.status, "success", JSON.stringify(done));
          return Buffer.from((await tk.kernel.blobs.get(keyOf(done.image_url)))!).toString("hex");
        }),
      );
      assert.is(images[0], images[1], "the sandbox is seeded by the reference's content, not its stored name");
    },
  );

  t("one partner's refused charge leaves another partner's identical reference in place", async () => {
    const rich = await tk.partner({ credits: 100 });
    const poor = await tk.partner({ credits: 1 });
    const stored = await tk.request("POST", "/generate-image", {
      key: rich.key,
      body: { prompt: "x", ref_images: [ref(3)] },
    });
    assert.is(stored.status, 202, JSON.stringify(stored.body));
    const [url] = await refUrls(tk, rich.key);
    const refsBefore = (await tk.kernel.blobs.keys()).filter((k) => k.startsWith("images/refs/"));

    const refused = await tk.request("POST", "/generate-image", {
      key: poor.key,
      body: { prompt: "x", ref_images: [ref(3), ref(4)] },
    });
    assert.is(refused.status, 402);
    assert.ok(await tk.kernel.blobs.has(keyOf(url!)), "the other partner's reference stays");
    assert.equal(
      (await tk.kernel.blobs.keys()).filter((k) => k.startsWith("images/refs/")),
      refsBefore,
      "and the refused request left nothing behind",
    );
  });

  t(
    "side by side, a refused request and an accepted one with the same bytes: the accepted one keeps its file",
    async () => {
      const rich = await tk.partner({ credits: 1000 });
      const poor = await tk.partner({ credits: 1 });
      for (let round = 10; round < 14; round++) {
        const [refused, accepted] = await Promise.all([
          tk.request("POST", "/generate-image", { key: poor.key, body: { prompt: "x", ref_images: [ref(round)] } }),
          tk.request("POST", "/generate-image", { key: rich.key, body: { prompt: "x", ref_images: [ref(round)] } }),
        ]);
        assert.is(refused.status, 402);
        assert.is(accepted.status, 202, JSON.stringify(accepted.body));
        const [url] = await refUrls(tk, rich.key);
        assert.ok(await tk.kernel.blobs.has(keyOf(url!)), `round ${round}: the accepted request's reference stays`);
      }
    },
  );

  t.run();
}
