// How strong a secret an operator chose is: a small estimate of its entropy in bits, and the rule an admin
// token must pass (core/bootstrap.ts). Length alone let `"a".repeat(32)` boot; what a guesser tries first
// is what people type: one character over and over, a short alphabet, a counting run, words, a phrase said
// twice. The estimate charges each character what an attacker who tries those shapes first still has to
// guess, so a random token is worth about its length times log2 of its alphabet and a typed one far less.

/**
 * The rule: at least this many characters and this many estimated bits. 100, not 128: the estimate is
 * pessimistic on purpose, and a random 128-bit key (`openssl rand -hex 16`, 32 hex digits) must pass every
 * time (test/core/token-strength.test.ts draws thousands); 100 bits are far past any online guessing, which
 * the admin door throttles besides (transports/admin/door.ts).
 */
export const MIN_ADMIN_TOKEN_LENGTH = 32;
export const MIN_ADMIN_TOKEN_BITS = 100;

/**
 * What a guesser tries before random strings: words of admin tokens, passwords and examples. A run of letters
 * spelling one costs about log2 of a large dictionary (DICTIONARY_WORD_BITS), not its letters. Kept short:
 * it catches the shapes of `admin-secret-token-...`; the repetition and sequence rules catch the rest.
 */
const WORDS = [
  "admin",
  "token",
  "secret",
  "password",
  "passwd",
  "pass",
  "test",
  "tests",
  "testing",
  "example",
  "sample",
  "demo",
  "change",
  "changeme",
  "default",
  "letmein",
  "welcome",
  "qwerty",
  "asdf",
  "zxcv",
  "hello",
  "world",
  "root",
  "master",
  "mediagate",
  "media",
  "gate",
  "key",
  "api",
  "server",
  "local",
  "localhost",
  "prod",
  "production",
  "staging",
  "dev",
  "development",
  "my",
  "the",
  "for",
  "and",
  "token",
  "adm",
  "restart",
  "bench",
  "attack",
  "corpus",
  "upload",
  "video",
  "image",
  "omni",
  "caption",
  "captions",
  "webhook",
  "webhooks",
  "script",
  "runner",
  "worker",
  "probe",
  "blobs",
  "hosts",
  "several",
  "sigterm",
  "boot",
  "analysis",
  "revocation",
  "cache",
  "balance",
  "abc",
  "xyz",
  "foo",
  "bar",
  "baz",
  "dummy",
  "fake",
  "insecure",
  "please",
  "super",
  "strong",
  "random",
  "value",
];
const WORD_SET = new Set(WORDS);
/** Keyboard rows and walks: any four or more characters along one is charged like a word. */
const WALKS = [
  "qwertyuiop",
  "asdfghjkl",
  "zxcvbnm",
  "1234567890",
  "1q2w3e4r5t6y7u8i9o0p",
  "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p",
  "qazwsxedcrfvtgbyhnujmikolp",
];
const LONGEST_WORD = Math.max(...WORDS.map((w) => w.length));
/** A word of WORDS (about a hundred, and their neighbours a guesser would try): what spelling one is worth. */
const DICTIONARY_WORD_BITS = 10;
/** A character that goes on a run of repeats or steps of one (`aaaa`, `1234`, `dcba`), from its third. */
const RUN_CHAR_BITS = 1;
/** A copy of an earlier stretch (`abcXabcX`): where it starts and how long, not its characters. */
const COPY_BITS = 8;
const MIN_COPY = 3;
/**
 * A letter of a word-shaped run (8 or more letters of one case, 30 % or more of them vowels, as English has
 * about 38 % and random letters 19 %): words not in WORDS are still words, at about 2.5 bits a letter
 * (Shannon's estimate of English is lower). A random token seldom has such a run, and loses little by one.
 */
const PROSE_LETTER_BITS = 2.5;
const PROSE_RUN = /[a-z]{8,}|[A-Z][a-z]{7,}|[A-Z]{8,}/g;

/** Which characters of `text` belong to a word-shaped run of letters. */
function proseMask(text: string): boolean[] {
  const mask = new Array<boolean>(text.length).fill(false);
  for (const m of text.matchAll(PROSE_RUN)) {
    const vowels = m[0].replace(/[^aeiou]/gi, "").length;
    if (vowels / m[0].length >= 0.3) for (let k = 0; k < m[0].length; k++) mask[m.index! + k] = true;
  }
  return mask;
}

/** The size of the alphabet a token draws from, by the classes its characters belong to. */
function alphabetSize(token: string): number {
  let lower = false,
    upper = false,
    digit = false,
    other = false;
  for (const c of token) {
    if (c >= "a" && c <= "z") lower = true;
    else if (c >= "A" && c <= "Z") upper = true;
    else if (c >= "0" && c <= "9") digit = true;
    else other = true;
  }
  // Only hex digits (any case, `openssl rand -hex`): 16, not letters and digits.
  if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) return 16;
  return (lower ? 26 : 0) + (upper ? 26 : 0) + (digit ? 10 : 0) + (other ? 33 : 0);
}

/** The longest earlier copy of the text at `i` (at least MIN_COPY characters), or 0. */
function copyAt(text: string, i: number): number {
  let best = 0;
  for (let j = 0; j < i; j++) {
    let n = 0;
    while (i + n < text.length && text[j + n] === text[i + n]) n++;
    if (n > best) best = n;
  }
  return best >= MIN_COPY ? best : 0;
}

/** The longest dictionary word starting at `i` (case folded), or 0. */
function wordAt(folded: string, i: number): number {
  let walk = 0;
  for (const w of WALKS) {
    let n = 0;
    const start = w.indexOf(folded[i] ?? "");
    if (start < 0) continue;
    while (i + n < folded.length && w[start + n] === folded[i + n]) n++;
    if (n >= 4 && n > walk) walk = n;
  }
  for (let n = Math.min(LONGEST_WORD, folded.length - i); n >= 3 && n > walk; n--)
    if (WORD_SET.has(folded.slice(i, i + n))) return n;
  return walk;
}

/**
 * An estimate of a secret's entropy in bits: each character is worth log2 of the token's alphabet, except
 * where it continues a run (a repeat of the previous character or a step of one from it: 1 bit), belongs to
 * a dictionary word (10 bits the word), a copy of an earlier stretch (8 bits the copy) or a word-shaped run
 * of letters (2.5 bits a letter). Distinct
 * characters cap it too: a token of 3 distinct characters is worth at most its length times log2(3).
 * Deliberately pessimistic about typed secrets and fair to random ones (a 32-byte key in hex or base64,
 * the generated `adm_` + 48 hex digits, are each worth far more than MIN_ADMIN_TOKEN_BITS). Tokens are at
 * read up to 256 characters (the copy search is quadratic; the rest adds nothing a guesser fears).
 */
export function estimateBits(token: string): number {
  const text = token.slice(0, 256);
  const perChar = Math.log2(Math.max(2, alphabetSize(text)));
  const folded = text.toLowerCase();
  const prose = proseMask(text);
  let bits = 0;
  for (let i = 0; i < text.length; ) {
    const word = wordAt(folded, i);
    const copy = copyAt(text, i);
    if (word > 0 && word >= copy) {
      // A word costs what guessing it costs, or what its letters would, whichever is less.
      let letters = 0;
      for (let k = i; k < i + word; k++) letters += prose[k] ? Math.min(perChar, PROSE_LETTER_BITS) : perChar;
      bits += Math.min(DICTIONARY_WORD_BITS, letters);
      i += word;
      continue;
    }
    if (copy > 0) {
      bits += COPY_BITS;
      i += copy;
      continue;
    }
    // The third character of a run and on: two in a row happen by chance in a random token (3 in 16 in hex).
    const step = i > 0 ? text.charCodeAt(i) - text.charCodeAt(i - 1) : 99;
    const before = i > 1 ? text.charCodeAt(i - 1) - text.charCodeAt(i - 2) : 99;
    const inRun = step >= -1 && step <= 1 && step === before;
    bits += inRun ? RUN_CHAR_BITS : prose[i] ? Math.min(perChar, PROSE_LETTER_BITS) : perChar;
    i++;
  }
  const distinct = new Set(text).size;
  return Math.min(bits, text.length * Math.log2(Math.max(2, distinct)));
}

/** Why a token fails the rule (a sentence for the operator), or null when it passes. */
export function weakTokenReason(token: string): string | null {
  if (token.length < MIN_ADMIN_TOKEN_LENGTH)
    return `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (got ${token.length})`;
  const bits = Math.floor(estimateBits(token));
  if (bits < MIN_ADMIN_TOKEN_BITS) {
    return `is too easy to guess (about ${bits} bits: repeated characters, counting runs, words or a short alphabet; at least ${MIN_ADMIN_TOKEN_BITS} are needed)`;
  }
  return null;
}
