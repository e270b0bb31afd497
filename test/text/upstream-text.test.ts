// lib/upstream-text.ts: upstream text (model answers, provider errors, transcript words, titles) cleaned like
// partner input before it is stored: control characters out (tab, LF, CR kept), unpaired surrogates U+FFFD,
// capped without splitting a pair; JSON values string by string, escapes included.
import { test } from "uvu";
import * as assert from "uvu/assert";
import { capText, cleanUpstreamJson, cleanUpstreamText, isCleanText } from "../../lib/upstream-text.ts";

test("NUL and other controls removed, tab/LF/CR kept, unpaired surrogates replaced, pairs kept", () => {
  assert.is(cleanUpstreamText("a\u0000b\u0007c\u001bd\u007fe\u0085f", 100), "abcdef");
  assert.is(cleanUpstreamText("line\tone\r\nline two\n", 100), "line\tone\r\nline two\n");
  assert.is(cleanUpstreamText("x\ud800y\udc00z\ud800", 100), "x\ufffdy\ufffdz\ufffd");
  assert.is(cleanUpstreamText("emoji \ud83d\ude00 ok", 100), "emoji \ud83d\ude00 ok");
  assert.is(cleanUpstreamText("\udc00\ud800", 100), "\ufffd\ufffd", "reversed halves are two lone ones");
  assert.is(cleanUpstreamText(42, 100), "");
  assert.is(cleanUpstreamText(null, 100), "");
  assert.ok(isCleanText("plain text \ud83d\ude00"));
  assert.not.ok(isCleanText("a\u0000"));
  assert.not.ok(isCleanText("a\ud800"));
});

test("the cap counts cleaned text and never splits a surrogate pair", () => {
  assert.is(cleanUpstreamText(`${"\u0000".repeat(10)}abc`, 3), "abc");
  assert.is(capText("ab\ud83d\ude00", 3), "ab", "the pair is dropped whole");
  assert.is(capText("ab\ud83d\ude00", 4), "ab\ud83d\ude00");
  assert.is(cleanUpstreamText("x".repeat(1_000_000), 400).length, 400);
  // A long hostile text: only its start is cleaned (a few times the cap), and in linear time.
  const hostile = "\ud800\u0000".repeat(500_000);
  let started = performance.now();
  assert.is(cleanUpstreamText(hostile, 10), "\ufffd".repeat(10));
  assert.is(cleanUpstreamText(hostile, 20_000).length, 20_000);
  console.log(`cleaned the start of 1,000,000 hostile code units in ${Math.round(performance.now() - started)} ms`);
  started = performance.now();
  assert.is(cleanUpstreamText(hostile, 1_000_000).length, 500_000);
  console.log(`cleaned all 1,000,000 hostile code units in ${Math.round(performance.now() - started)} ms`);
});

test("JSON: every string and key cleaned, escapes included once parsed; other values kept", () => {
  const parsed = JSON.parse(
    '{"summary":"a\\u0000b","tags":["x\\ud800",1,true,null],"k\\u0000ey":{"deep":"\\u0007ok"}}',
  );
  assert.equal(cleanUpstreamJson(parsed, 100), {
    summary: "ab",
    tags: ["x\ufffd", 1, true, null],
    key: { deep: "ok" },
  });
  let deep: unknown = "leaf";
  for (let i = 0; i < 100; i++) deep = [deep];
  assert.ok(JSON.stringify(cleanUpstreamJson(deep, 10)).includes("null"), "past 64 levels the rest is dropped");
});

test.run();
