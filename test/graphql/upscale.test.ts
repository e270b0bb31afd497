// Upscaling over GraphQL, derived from the same declarations as REST: upscaleImage, then imageStatus until the
// PNG is there at the doubled size; validation errors carry the REST texts. On PGlite (the transports do not
// depend on the backend).
import * as assert from "uvu/assert";
import { probeImage } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { UPSCALE_ERRORS as E } from "../../plugins/upscale/errors.ts";
import upscale from "../../plugins/upscale/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { areaSuite, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite("upscale over GraphQL", [account, imagesSandbox, images, videoSandbox, video, upscale], 20);

const picture = (w: number, h: number) => {
  const px = new Uint8Array(w * h * 3);
  for (let i = 0; i < px.length; i++) px[i] = (i * 7) % 251;
  return Buffer.from(encodePng(w, h, px, 3)).toString("base64");
};

t("upscaleImage, then imageStatus to success with a PNG twice the size", async ({ tk }) => {
  // Polled every 50 ms for as long as a loaded machine takes: the status limit (60/min) is raised for this account.
  const gql = await graphqlPartner(tk, {
    credits: 100,
    limits: { rate_limits: { "GET /image-status/<gen_id>": 1_000_000 } },
  });
  const sub = await gql.data(
    "mutation($input: UpscaleImageInput) { upscaleImage(input: $input) { job_id public_id status upscale_factor output { width height tier } credits_used } }",
    { input: { image_base64: picture(40, 30), upscale_factor: 2 } },
  );
  const up = sub.upscaleImage;
  assert.equal(
    [up.status, up.upscale_factor, up.output, up.credits_used],
    ["pending", 2, { width: 80, height: 60, tier: "2K" }, 8],
  );
  let status: any;
  for (;;) {
    const st = await gql.data("query($id: String!) { imageStatus(id: $id) { status image_url } }", {
      id: up.public_id,
    });
    status = st.imageStatus;
    if (status.status !== "pending") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.is(status.status, "success");
  const bytes = (await tk.kernel.blobs.get(new URL(status.image_url).pathname.slice("/media/".length)))!;
  const info = await probeImage(bytes);
  assert.equal([info.format, info.width, info.height], ["png", 80, 60]);
});

refusalTest(t, "validation errors carry the REST texts", { credits: 100 }, [
  [
    mutationOf("upscaleImage", "job_id", "UpscaleImageInput"),
    { input: { image_base64: picture(8, 8), upscale_factor: 3 } },
    E.factor,
  ],
  [mutationOf("upscaleVideo"), { input: { video_url: "http://example.com/a.mp4" } }, E.videoUrl],
]);

t.run();
