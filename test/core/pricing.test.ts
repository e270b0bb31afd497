import { suite } from "uvu";
import * as assert from "uvu/assert";
import { chargeFor, mergeCosts, type Price, standardBasis } from "../../core/pricing.ts";
import { ApiError } from "../../lib/api-error.ts";

const t = suite("pricing and tier math");

const one = (rate: number, units = 1, key: (string | number)[] = ["x"]): Price => ({ lines: [{ key, rate, units }] });

t("api_plus10 is ceil(standard * 11 / 10), integer-exact", () => {
  // 50 * 1.1 is 55.00000000000001 in doubles; the ledger must say 55.
  assert.is(chargeFor(one(50), "api_plus10"), 55);
  // Every image and upscale price of spec part 1 (standard basis -> api_plus10).
  const table: Array<[number, number]> = [
    [15, 17],
    [22, 25],
    [19, 21],
    [24, 27],
    [29, 32],
    [28, 31],
    [34, 38],
    [7, 8],
    [14, 16],
  ];
  for (const [standard, plus10] of table)
    assert.is(chargeFor(one(standard), "api_plus10"), plus10, `standard ${standard}`);
});

t("rounding happens once per job, not per unit", () => {
  // Video upscale factor 2: 6 credits/s standard, 6.6 shown. 7 s -> 42 standard -> ceil(46.2) = 47, not 7 * 7 = 49.
  assert.is(chargeFor(one(6, 7), "api_plus10"), 47);
  // Quantity 3 of a 15-credit image: ceil(45 * 1.1) = 50 (not 3 * 17 = 51).
  assert.is(chargeFor(one(15, 3), "api_plus10"), 50);
});

t("standard tier pays the standard basis", () => {
  assert.is(chargeFor(one(15, 3), "standard"), 45);
  assert.is(
    standardBasis({
      lines: [
        { key: ["a"], rate: 6, units: 10 },
        { key: ["b"], rate: 5 },
      ],
    }),
    65,
  );
});

t("custom tier: negotiated rates, and a 400 before any charge when one is missing", () => {
  const rates = { image_models: { "image-a-pro": { "2K": 12.5 } } };
  assert.is(chargeFor(one(15, 3, ["image_models", "image-a-pro", "2K"]), "custom", rates), 38); // 37.5 rounded up once
  try {
    chargeFor(
      { ...one(22, 1, ["image_models", "image-a-pro", "4K"]), customRateMissing: "not on your plan" },
      "custom",
      rates,
    );
    assert.unreachable();
  } catch (err) {
    assert.instance(err, ApiError);
    assert.is((err as ApiError).status, 400);
    assert.is((err as ApiError).message, "not on your plan");
  }
});

t("a flat add-on is applied after the markup, the same on every tier", () => {
  const p: Price = { ...one(120), addOn: 5 };
  assert.is(chargeFor(p, "api_plus10"), 132 + 5);
  assert.is(chargeFor(p, "standard"), 125);
});

t(
  "a surcharge with an all-in key: flat on api_plus10 and standard; a custom account's all-in rate replaces clip + surcharge",
  () => {
    // Omni 1080p 8 s with a reference video (spec part 3): 154 + 47 on api_plus10, 140 + 47 standard.
    const clip: Price = {
      lines: [{ key: ["omni", "video_price", "1080p", 8], rate: 140 }],
      addOn: 47,
      allInKey: ["omni", "reference_video_price", "1080p", 8],
    };
    assert.is(chargeFor(clip, "api_plus10"), 201);
    assert.is(chargeFor(clip, "standard"), 187);
    // Custom with only the clip rate: negotiated clip + the same flat surcharge.
    assert.is(chargeFor(clip, "custom", { omni: { video_price: { "1080p": { 8: 100 } } } }), 147);
    // Custom with an all-in rate: that rate, nothing added (a fraction rounds up once).
    assert.is(
      chargeFor(clip, "custom", {
        omni: { video_price: { "1080p": { 8: 100 } }, reference_video_price: { "1080p": { 8: 120.5 } } },
      }),
      121,
    );
    // The all-in rate alone is enough: no clip rate needed.
    assert.is(chargeFor(clip, "custom", { omni: { reference_video_price: { "1080p": { 8: 130 } } } }), 130);
    // Neither: the 400 before any charge.
    assert.throws(
      () => chargeFor(clip, "custom", {}),
      (e: unknown) => e instanceof ApiError && e.status === 400,
    );
  },
);

t("costs fragments merge deeply; a leaf claimed twice is an error", () => {
  const merged = mergeCosts([
    { plugin: "a", costs: { upscale: { image: { x: 1 } } } },
    { plugin: "b", costs: { upscale: { video: { y: 2 } } } },
  ]);
  assert.equal(merged, { upscale: { image: { x: 1 }, video: { y: 2 } } });
  assert.throws(
    () =>
      mergeCosts([
        { plugin: "a", costs: { analysis: 50 } },
        { plugin: "b", costs: { analysis: 50 } },
      ]),
    /declared by plugins "a" and "b"/,
  );
});

t("measured seconds with decimals are rounded up once, after the tier markup", () => {
  // spec part 2: 5 s output + 5 s reference at 480p on beta-2-5 is 13.2 x 10 = 132 (standard 12 x 10).
  assert.is(chargeFor(one(12, 10), "api_plus10"), 132);
  // 12 x 10.3 = 123.6 standard; api_plus10 13.2 x 10.3 = 135.96 -> 136 (not ceil(124 x 1.1) = 137).
  assert.is(chargeFor(one(12, 10.3), "standard"), 124);
  assert.is(chargeFor(one(12, 10.3), "api_plus10"), 136);
});

t.run();
