// The platform's token estimate: an approximation of the cl100k tokenizer that never runs it.
//
// One pass over the text splits it the way cl100k's pre-tokenizer does (words with an
// optional leading space or mark, digit groups of up to three, punctuation runs, white
// space), and prices each piece:
//   - a piece cl100k holds as one token (its vocabulary's tokens that the pre-tokenizer keeps
//     whole), or one seen often in real text, is looked up in a table of its exact token count;
//   - any other word costs one token plus, for each pair of neighbouring letters, the
//     chance that the tokenizer cuts between them (learned per letter pair), plus a cost
//     per non-ASCII letter by script, and each Latin, Greek or Cyrillic letter beyond ASCII,
//     known or not, what the words of the languages that use it miss (ј, є, ė, ļ);
//   - punctuation runs the same way with punctuation pairs; digit groups one token each;
//     white space by the length of its runs.
// How it stays close to the cost of reading the text once: the text's code units are copied
// (natively) into a typed array, which reads about twice as fast as charCodeAt; an ASCII
// piece's kind comes from one table look-up of its first two characters; a word or a run of
// marks is hashed in the same loop that finds its end; the known table is read without loops
// or branches (two slots), and since most pieces are known (86% of ASCII words, 98% of runs of
// marks), the rule's price is worked out, from the piece's letters again, only for the others.
// Only non-ASCII text and longer white space take the general path.
// The tables come from bench/fit/calibrate.ts. Everything is integer arithmetic in
// thousandths of a token, so the same text gives the same number on every machine, and
// each piece is priced on its own, so the units of two texts cut at the start of a line add
// up to the units of both (see `units`), which lets the fitting code size a whole from its
// parts.

import { Buffer } from "node:buffer";
import { TABLES } from "./count-tables.ts";
import { BMP_CLASSES } from "./unicode-classes.ts";

/** Character classes; PAIR_BIT marks a character written as two UTF-16 code units. */
const LOWER = 0;
const UPPER = 1;
const XLETTER = 2;
const DIGIT = 3;
const XDIGIT = 4;
const SPACE = 5;
const NEWLINE = 6;
const WS = 7;
const PUNCT = 8;
const XPUNCT = 9;
const HIGH = 10;
const PAIR_BIT = 16;

/** Chunk kinds reported to a calibration sink. */
export const CHUNK_WORD = 0;
export const CHUNK_DIGITS = 1;
export const CHUNK_PUNCT = 2;
export const CHUNK_SPACE = 3;
export const CHUNK_CONTRACTION = 4;

/** Called for every piece the scan prices; used by calibration, never by the library. */
export type ChunkSink = (kind: number, start: number, end: number, units: number) => void;

/** White-space pieces longer than this many characters are charged by their length in `weigh`. */
export const LONG_SPACE = 32;
/** ...at one token for this many characters. */
export const SPACE_CHARS_PER_TOKEN = 4;

const CLASS = new Uint8Array(65536);
(function initClasses(): void {
  for (let c = 0; c < 128; c++) CLASS[c] = PUNCT;
  for (let c = 97; c <= 122; c++) CLASS[c] = LOWER;
  for (let c = 65; c <= 90; c++) CLASS[c] = UPPER;
  for (let c = 48; c <= 57; c++) CLASS[c] = DIGIT;
  CLASS[32] = SPACE;
  CLASS[10] = NEWLINE;
  CLASS[13] = NEWLINE;
  CLASS[9] = WS;
  CLASS[11] = WS;
  CLASS[12] = WS;
  const byLetter: Record<string, number> = { L: XLETTER, N: XDIGIT, W: WS, P: XPUNCT };
  const n = BMP_CLASSES.length / 5;
  for (let r = 0; r < n; r++) {
    const start = parseInt(BMP_CLASSES.slice(r * 5, r * 5 + 4), 16);
    const end = r + 1 < n ? parseInt(BMP_CLASSES.slice(r * 5 + 5, r * 5 + 9), 16) : 65536;
    const k = byLetter[BMP_CLASSES.charAt(r * 5 + 4)] ?? XPUNCT;
    CLASS.fill(k, start, end);
  }
  CLASS.fill(HIGH, 0xd800, 0xdc00);
  CLASS.fill(XPUNCT, 0xdc00, 0xe000);
})();

/** Class of an astral character: a rough cut by plane and block (letters of historic
 * scripts, mathematical letters and the CJK extensions; emoji and the rest as symbols). */
function astralClass(cp: number): number {
  if (cp >= 0x20000 && cp < 0x40000) return XLETTER;
  if (cp >= 0x1d400 && cp < 0x1d800) return XLETTER;
  if (cp >= 0x10000 && cp < 0x1c000) return XLETTER;
  return XPUNCT;
}

/** Class of the character at i (a high surrogate followed by a low one is one character). */
function classAt(a: Uint16Array, i: number, to: number): number {
  const k = CLASS[a[i]!]!;
  if (k !== HIGH) return k;
  if (i + 1 < to) {
    const lo = a[i + 1]!;
    if (lo >= 0xdc00 && lo < 0xe000) {
      const cp = ((a[i]! - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
      return astralClass(cp) | PAIR_BIT;
    }
  }
  return XPUNCT;
}

/** Script groups of non-ASCII letters, for their per-letter cost. */
export const SCRIPTS = ["latin", "greek", "cyrillic", "rtl", "indic", "hangul", "kana", "han", "other2", "other3", "astral"] as const;
/** The script group of a non-ASCII letter (an index into SCRIPTS); calibration prices them alike. */
export function scriptOf(cp: number): number {
  if (cp < 0x250 || (cp >= 0x1e00 && cp < 0x1f00)) return 0;
  if ((cp >= 0x370 && cp < 0x400) || (cp >= 0x1f00 && cp < 0x2000)) return 1;
  if (cp >= 0x400 && cp < 0x530) return 2;
  if (cp >= 0x590 && cp < 0x900) return 3;
  if (cp >= 0x900 && cp < 0x1000) return 4;
  if ((cp >= 0xac00 && cp < 0xd7b0) || (cp >= 0x1100 && cp < 0x1200) || (cp >= 0x3130 && cp < 0x3190)) return 5;
  if ((cp >= 0x3040 && cp < 0x3100) || (cp >= 0x31f0 && cp < 0x3200) || (cp >= 0xff66 && cp < 0xffa0)) return 6;
  if ((cp >= 0x3400 && cp < 0x4dc0) || (cp >= 0x4e00 && cp < 0xa000) || (cp >= 0xf900 && cp < 0xfb00) || cp >= 0x20000) return 7;
  if (cp < 0x800) return 8;
  if (cp < 0x10000) return 9;
  return 10;
}

/** The index of Han in SCRIPTS. */
const HAN_SCRIPT = SCRIPTS.indexOf("han");

/** scriptOf of every code unit, for the scan (one look-up instead of a chain of ranges). */
const SCRIPT = new Uint8Array(65536);
for (let c = 0; c < 65536; c++) SCRIPT[c] = scriptOf(c);

/** Ranges (multiples of 64) whose characters are priced by their own token count, from tables.cjkBlocks. */
export const CJK_RANGES: readonly (readonly [number, number])[] = [
  [0x3040, 0x3100],
  [0x3400, 0x4dc0],
  [0x4e00, 0xa000],
  [0xac00, 0xd7c0],
];

/** Tokens of each CJK character on its own (0 outside CJK_RANGES). */
function cjkCosts(singles: string, blocks: string): Uint8Array {
  const cost = new Uint8Array(65536);
  let b = 0;
  for (const [lo, hi] of CJK_RANGES) {
    for (let c = lo; c < hi; c += 64) cost.fill(Number(blocks.charAt(b++)) || 2, c, c + 64);
  }
  for (let i = 0; i < singles.length; i++) cost[singles.charCodeAt(i)] = 1;
  return cost;
}

/** Symbol groups of non-ASCII punctuation, for their per-character cost. */
export const SYMBOLS = ["latin1", "general", "cjk", "other3", "astral"] as const;
/** The group of a non-ASCII symbol (an index into SYMBOLS). */
export function symbolOf(cp: number): number {
  if (cp < 0x800) return 0;
  if (cp >= 0x2000 && cp < 0x2c00) return 1;
  if ((cp >= 0x3000 && cp < 0x3040) || (cp >= 0xff00 && cp < 0xfff0)) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

/** Index of an ASCII punctuation character among the 32 printable ones (32 = anything else). */
const PUNCT_INDEX = new Uint8Array(128).fill(32);
(function initPunct(): void {
  let n = 0;
  for (let c = 33; c < 127; c++) {
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) continue;
    PUNCT_INDEX[c] = n++;
  }
})();
/** Index of a prefix before a word: 0-32 as PUNCT_INDEX, 33 space, 34 other white space, 35 non-ASCII. */
const PREFIX_INDEX = new Uint8Array(128);
for (let c = 0; c < 128; c++) PREFIX_INDEX[c] = c === 32 ? 33 : CLASS[c] === WS ? 34 : PUNCT_INDEX[c]!;

const FNV = 0x811c9dc5 | 0;
/** FNV-1a of the one character c. */
const HASH_ONE = new Int32Array(128);
for (let c = 0; c < 128; c++) HASH_ONE[c] = Math.imul(FNV ^ c, 0x01000193);

/** 1 when the code unit x is an ASCII digit, else 0. */
function isDigit(x: number): number {
  return ((x - 58) & ~(x - 48)) >>> 31;
}

/**
 * What an ASCII piece is, by its first character and the one after it (127 for none, or for
 * anything not ASCII): letters; a prefix and letters; digits; marks (after an optional
 * space); one mark on its own (before a digit or white space); one white-space character
 * before something else; more white space; or a case the general path takes (a contraction,
 * anything that needs more than two characters).
 */
const START_WORD = 1;
const START_PREFIXED = 2;
const START_DIGITS = 3;
const START_MARKS = 4;
const START_SPACE = 5;
const START_BLANK = 6;
const START_GENERAL = 7;
const START_MARK = 8;
const START = new Uint8Array(128 * 128);
(function initStart(): void {
  const letter = (x: number): boolean => ((x | 32) - 97) >>> 0 < 26;
  const space = (x: number): boolean => x === 32 || CLASS[x] === WS || CLASS[x] === NEWLINE;
  for (let c = 0; c < 128; c++) {
    for (let n = 0; n < 128; n++) {
      let k = START_GENERAL;
      if (letter(c)) k = START_WORD;
      else if (CLASS[c] === DIGIT) k = START_DIGITS;
      else if (n === 127) k = START_GENERAL;
      else if (c === 39 && letter(n)) k = "stmdrvlSTMDRVL".includes(String.fromCharCode(n)) ? START_GENERAL : START_PREFIXED;
      else if (letter(n)) k = CLASS[c] === NEWLINE ? START_SPACE : START_PREFIXED;
      else if (CLASS[c] === PUNCT) k = CLASS[n] === PUNCT || CLASS[n] === NEWLINE ? START_MARKS : START_MARK;
      else if (c === 32 && CLASS[n] === PUNCT) k = START_MARKS;
      else if (space(c) && !space(n)) k = START_SPACE;
      else if (space(c) && space(n)) k = START_BLANK;
      START[(c << 7) | n] = k;
    }
  }
})();

function prefixIndex(c: number): number {
  if (c === 32) return 33;
  if (c < 128) return CLASS[c] === WS ? 34 : PUNCT_INDEX[c]!;
  return CLASS[c] === WS ? 34 : 35;
}

/** The tables an estimate is made from (count-tables.ts holds the calibrated ones). */
export type Tables = {
  readonly known: readonly (readonly string[])[];
  readonly wordPair: readonly number[];
  readonly wordPrefix: readonly number[];
  /** By prefix (none, space, other) times 4 shapes (lower, Capital, UPPER, miXed) times 32 lengths. */
  readonly wordLength: readonly number[];
  readonly scriptLetter: readonly number[];
  /** By script (SCRIPTS) times 16 lengths: what the letter costs miss for words of that length. */
  readonly foreignLength: readonly number[];
  /**
   * Letters beyond ASCII of the Latin, Greek and Cyrillic scripts (below U+2000), each with
   * what a word that holds it costs more, known or not, for each time it occurs there: cl100k
   * splits the words of some languages far more than others of the same script, and their
   * letters tell them (ј, є, ė, ļ). Fitted on lines. Optional: none is no charge.
   */
  readonly lineLetters?: string;
  readonly lineLetterUnits?: readonly number[];
  /**
   * Han characters of traditional Chinese that simplified Chinese does not use, and what each
   * costs more than its script's letter cost says: cl100k merges them with their neighbours less
   * often than the simplified characters the Han cost was fitted on. Optional: none is no charge.
   */
  readonly hanTraditional?: string;
  readonly hanTraditionalUnits?: number;
  /**
   * Pieces cl100k holds as one token: the tokens of its vocabulary that the pre-tokenizer
   * keeps whole (words and runs of marks; count-vocab.ts), each priced as a known piece of one
   * token, so that the rules price only pieces of two tokens or more. singles[n] holds those of
   * n code units one after another. Optional: none leaves the rules to price them.
   */
  readonly singles?: readonly string[];
  /** Kana, Han and Hangul characters that cl100k holds as one token each. */
  readonly cjkSingles: string;
  /** For each block of 64 characters of CJK_RANGES, the tokens (2 or 3) of its other characters. */
  readonly cjkBlocks: string;
  readonly punctPair: readonly number[];
  readonly symbol: readonly number[];
  readonly constants: {
    readonly wordBase: number;
    readonly scriptSwitch: number;
    readonly punctBase: number;
    readonly symbolSwitch: number;
    readonly punctNewline: number;
    readonly spaceJoin: number;
    readonly contraction: number;
    readonly foreignDigit: number;
  };
};

/** FNV-1a over UTF-16 code units, never 0 (0 marks an empty slot). */
export function hashPiece(text: string, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h === 0 ? 1 : h;
}

/** A piece's hash's fingerprint as its slot keeps it: its low 24 bits, times 256. */
function fingerprint(h: number): number {
  return h << 8;
}
/** A hash's first slot in a table of 1 << (32 - shift) slots. */
function slotA(h: number, shift: number): number {
  return Math.imul(h, 0x9e3779b1) >>> shift;
}
/** ...and its second. */
function slotB(h: number, shift: number): number {
  return Math.imul(h ^ (h >>> 15), 0x85ebca6b) >>> shift;
}

/**
 * The known pieces' table: 1 << bits slots, each piece in one of its hash's two slots (cuckoo
 * hashing), the slot holding the hash's fingerprint plus the piece's tokens (1 to 255) in its low
 * 8 bits, 0 when empty. Undefined when the pieces do not fit, or when both of a piece's slots
 * would match its fingerprint (the caller doubles it). A hash given twice keeps its last tokens.
 */
function knownTable(hashes: Int32Array, tokens: Uint8Array, bits: number): Int32Array | undefined {
  const shift = 32 - bits;
  const table = new Int32Array(1 << bits);
  const keys = new Int32Array(1 << bits); // each slot's whole hash, to move it to its other slot
  next: for (let e = 0; e < hashes.length; e++) {
    let h = hashes[e]!;
    let v = fingerprint(h) | tokens[e]!;
    let slot = slotA(h, shift);
    const b = slotB(h, shift);
    if (table[slot] !== 0 && keys[slot] === h) {
      table[slot] = v;
      continue;
    }
    if (table[b] !== 0 && keys[b] === h) {
      table[b] = v;
      continue;
    }
    for (let kicks = 0; kicks <= 500; kicks++) {
      if (table[slot] === 0) {
        table[slot] = v;
        keys[slot] = h;
        continue next;
      }
      const h2 = keys[slot]!;
      const v2 = table[slot]!;
      table[slot] = v;
      keys[slot] = h;
      h = h2;
      v = v2;
      slot = slotA(h, shift) === slot ? slotB(h, shift) : slotA(h, shift);
    }
    return undefined;
  }
  for (const key of hashes) {
    const a = table[slotA(key, shift)]!;
    const b = table[slotB(key, shift)]!;
    if (slotA(key, shift) !== slotB(key, shift) && ((a ^ fingerprint(key)) >>> 8) === 0 && ((b ^ fingerprint(key)) >>> 8) === 0) return undefined;
  }
  return table;
}

/** hashPiece over the code units a[from, to). */
function hashCodes(a: Uint16Array, from: number, to: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < to; i++) h = Math.imul(h ^ a[i]!, 0x01000193);
  return h === 0 ? 1 : h;
}

/** Length of a contraction ('s 't 're 've 'm 'll 'd, any case) at i, or 0. */
function contraction(a: Uint16Array, i: number, to: number): number {
  if (i + 1 >= to) return 0;
  const x = a[i + 1]! | 32;
  if (x === 115 || x === 116 || x === 109 || x === 100) return 2; // s t m d
  if (i + 2 >= to) return 0;
  const y = a[i + 2]! | 32;
  if ((x === 114 && y === 101) || (x === 118 && y === 101) || (x === 108 && y === 108)) return 3; // re ve ll
  return 0;
}

/** Tokens of a run of one white-space character repeated n times (cl100k has long space tokens). */
function spaceRun(c: number, n: number): number {
  if (c === 32) return n <= 80 ? 1000 : 1000 + Math.ceil((n - 80) / 128) * 1000;
  if (c === 9) return n <= 20 ? 1000 : 1000 + Math.ceil((n - 20) / 16) * 1000;
  if (c === 10) return n <= 12 ? 1000 : 1000 + Math.ceil((n - 12) / 16) * 1000;
  return Math.ceil(n / 4) * 1000;
}

// The scan reads the text's UTF-16 code units from a typed array, which is about twice as
// fast as reading them one by one with charCodeAt: the text is copied there first, natively
// (Buffer's UTF-16LE write; short texts, and big-endian machines, by a loop). The array is
// kept for the next text unless the text is long, or a scan is already running (a sink that
// scans).
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** Texts up to this many code units reuse the kept array. */
const KEEP_CODES = 1 << 20;
/** Shorter texts are copied by a loop rather than by Buffer's write. */
const SHORT_TEXT = 32;
let keptCodes = new Uint16Array(4096);
let keptBytes = Buffer.from(keptCodes.buffer);
let scanning = false;

/** What follows the text's code units in the array (twice): a symbol no loop of the scan goes on through. */
const END = 0xffff;

/**
 * text[from, from + n) as code units, then END twice, in `into` (of n + 2) or in the kept
 * array (grown as needed).
 */
function codeUnits(text: string, from: number, n: number, into: Uint16Array | undefined): Uint16Array {
  let codes = into;
  let bytes: Buffer | undefined;
  if (codes === undefined) {
    if (n > KEEP_CODES) {
      codes = new Uint16Array(n + 2);
    } else {
      if (n + 2 > keptCodes.length) {
        keptCodes = new Uint16Array(Math.max(n + 2, Math.min(KEEP_CODES + 2, keptCodes.length * 2)));
        keptBytes = Buffer.from(keptCodes.buffer);
      }
      codes = keptCodes;
      bytes = keptBytes;
    }
  }
  if (n < SHORT_TEXT || !LITTLE_ENDIAN) {
    for (let i = 0; i < n; i++) codes[i] = text.charCodeAt(from + i);
  } else {
    bytes ??= Buffer.from(codes.buffer, codes.byteOffset, codes.byteLength);
    bytes.write(from === 0 ? text : text.slice(from, from + n), 0, 2 * n, "utf16le");
  }
  codes[n] = END;
  codes[n + 1] = END;
  return codes;
}

/** The scan function of an estimate made from the given tables. */
export type Scan = (text: string, from: number, to: number, weigh: boolean, sink?: ChunkSink) => number;

/** Builds the estimate from its tables (the library uses the calibrated ones; calibration tries others). */
export function createScan(tables: Tables): Scan {
  // The table of pieces whose token count is known exactly (about 104,000: the vocabulary's
  // single tokens and the calibrated pieces), on a 32-bit FNV-1a hash of the piece: cuckoo
  // hashing with two slots per hash, so that a look-up reads two slots and never loops or
  // branches. A slot is one 32-bit number, 24 bits of the hash and the piece's tokens, so that
  // the table takes 1 MB rather than the 2 MB of a hash and units side by side (a piece not
  // known reads slots that are seldom in the cache). A rare piece that shares its hash, or
  // its hash's 24 bits in one of its slots, with a known one is priced as that one; the
  // estimate stays deterministic. The pieces go in as their hashes and token counts: the
  // vocabulary's single tokens, then the calibrated pieces (a piece in both keeps the latter's).
  const singles = tables.singles ?? [];
  let size = tables.known.reduce((n, group) => n + group.length, 0);
  singles.forEach((pieces, n) => (size += n > 0 ? Math.floor(pieces.length / n) : 0));
  const hashes = new Int32Array(size);
  const tokens = new Uint8Array(size);
  let e = 0;
  singles.forEach((pieces, n) => {
    for (let k = 0; n > 0 && k + n <= pieces.length; k += n, e++) {
      hashes[e] = hashPiece(pieces, k, k + n);
      tokens[e] = 1;
    }
  });
  tables.known.forEach((group, index) => {
    if (index >= 255) throw new Error(`count tables: known pieces of ${index + 1} tokens do not fit`);
    for (const piece of group) {
      hashes[e] = hashPiece(piece, 0, piece.length);
      tokens[e++] = index + 1;
    }
  });
  /** Units by the tokens a slot holds; 0, what a piece not known reads, is -1. */
  const VALUES = new Int32Array(256);
  for (let t = 0; t < 256; t++) VALUES[t] = t === 0 ? -1 : t * 1000;
  let bits = 10;
  while (1 << bits < size * 2) bits++;
  let KNOWN = knownTable(hashes, tokens, bits);
  while (KNOWN === undefined) KNOWN = knownTable(hashes, tokens, ++bits);
  const KT = KNOWN;
  const SHIFT = 32 - bits;

  /**
   * Units of the known piece with hash h, or -1: its two slots read and compared without
   * branches (index 0 of VALUES is -1).
   */
  function known(h: number): number {
    const f = fingerprint(h);
    const x = KT[slotA(h, SHIFT)]!;
    const y = KT[slotB(h, SHIFT)]!;
    const mx = (((x ^ f) >>> 8) - 1) >> 31; // -1 when the slot holds h's fingerprint, else 0
    const my = (((y ^ f) >>> 8) - 1) >> 31;
    return VALUES[((x & mx) | (y & my)) & 255]!;
  }

  const WORD_PAIR = Int32Array.from(tables.wordPair);
  const WORD_PREFIX = Int32Array.from(tables.wordPrefix);
  const WORD_LENGTH = Int32Array.from(tables.wordLength);
  /** The price of each ASCII mark as a piece of its own (known, or one run of one mark). */
  const MARK_UNITS = new Int32Array(128);
  for (let c = 0; c < 128; c++) {
    const h = HASH_ONE[c]!;
    const exact = known(h === 0 ? 1 : h);
    MARK_UNITS[c] = exact >= 0 ? exact : tables.constants.punctBase;
  }
  const SCRIPT_LETTER = Int32Array.from(tables.scriptLetter);
  const FOREIGN_LENGTH = Int32Array.from(tables.foreignLength);
  const CJK_COST = cjkCosts(tables.cjkSingles, tables.cjkBlocks);
  /** What each BMP letter beyond ASCII costs on its own: its script's, times its tokens for CJK. */
  const LETTER_UNITS = new Int32Array(65536);
  for (let c = 128; c < 65536; c++) LETTER_UNITS[c] = (CJK_COST[c]! || 1) * SCRIPT_LETTER[SCRIPT[c]!]!;
  const traditional = tables.hanTraditional ?? "";
  for (let k = 0; k < traditional.length; k++) {
    const c = traditional.charCodeAt(k);
    if (SCRIPT[c] === HAN_SCRIPT) LETTER_UNITS[c] = LETTER_UNITS[c]! + (tables.hanTraditionalUnits ?? 0);
  }
  const PUNCT_PAIR = Int32Array.from(tables.punctPair);
  const SYMBOL = Int32Array.from(tables.symbol);
  const C = tables.constants;

  let lastEnd = 0; // where the piece the last price* function read ends (saves returning pairs)
  const LINE_LETTER = new Int32Array(0x2000);
  const lineLetters = tables.lineLetters ?? "";
  for (let k = 0; k < lineLetters.length; k++) {
    const c = lineLetters.charCodeAt(k);
    if (c < 0x2000) LINE_LETTER[c] = tables.lineLetterUnits?.[k] ?? 0;
  }


  /**
   * Prices the word that starts at `start` and whose letters start at `body` (one prefix
   * character before them, or none): its known units or the rule's price, plus the
   * lineLetterUnits of its Latin, Greek and Cyrillic letters beyond ASCII.
   */
  function priceWord(a: Uint16Array, start: number, body: number, to: number): number {
    let h = 0x811c9dc5 | 0;
    for (let i = start; i < body; i++) h = Math.imul(h ^ a[i]!, 0x01000193);
    // One pass finds the end, hashes, and prices the letters as a word with letters beyond
    // ASCII (pairs of ASCII letters, each other letter by its script, a cost per switch);
    // a word of ASCII letters only is priced by priceLetters instead.
    let foreign = false;
    let lineUnits = 0;
    let letterUnits = 0;
    let prev = -1; // index 0-51 of the previous ASCII letter, -2 after a non-ASCII letter
    let letters = 0;
    let script = -1;
    let i = body;
    for (; i < to; i++) {
      const c = a[i]!;
      const k = CLASS[c]!;
      if (k <= UPPER) {
        const idx = c >= 97 ? c - 97 : c - 39;
        if (prev >= 0) letterUnits += WORD_PAIR[prev * 52 + idx]!;
        else if (prev === -2) letterUnits += C.scriptSwitch;
        prev = idx;
      } else if (k === XLETTER) {
        foreign = true;
        const sc = SCRIPT[c]!;
        if (sc <= 2) {
          // (Latin, Greek and Cyrillic letters are all below U+2000, LINE_LETTER's length.)
          lineUnits += LINE_LETTER[c]!;
        }
        if (script < 0) script = sc;
        letterUnits += LETTER_UNITS[c]!;
        if (prev >= 0) letterUnits += C.scriptSwitch;
        prev = -2;
      } else if (k === HIGH && (classAt(a, i, to) & 15) === XLETTER) {
        foreign = true;
        const sc = scriptOf(((c - 0xd800) << 10) + (a[i + 1]! - 0xdc00) + 0x10000);
        if (script < 0) script = sc;
        letterUnits += SCRIPT_LETTER[sc]!;
        if (prev >= 0) letterUnits += C.scriptSwitch;
        prev = -2;
        letters++;
        h = Math.imul(h ^ c, 0x01000193);
        i++;
        h = Math.imul(h ^ a[i]!, 0x01000193);
        continue;
      } else {
        break;
      }
      letters++;
      h = Math.imul(h ^ c, 0x01000193);
    }
    lastEnd = i;
    const exact = known(h === 0 ? 1 : h);
    if (exact >= 0) return exact + lineUnits;
    const units = C.wordBase + prefixUnits(a, start, body);
    if (foreign) return units + letterUnits + FOREIGN_LENGTH[script * 16 + (letters < 15 ? letters : 15)]! + lineUnits;
    return units + priceLetters(a, start, body, i);
  }

  /** What the character before a word's letters costs (how often it is a token of its own), 0 when there is none. */
  function prefixUnits(a: Uint16Array, start: number, body: number): number {
    if (body === start) return 0;
    const first = a[body]!;
    return WORD_PREFIX[prefixIndex(a[start]!) * 2 + (first >= 65 && first <= 90 ? 1 : 0)]!;
  }

  /** The pair rule over ASCII letters [body, end), plus the miss by length and shape. */
  function priceLetters(a: Uint16Array, start: number, body: number, end: number): number {
    let units = 0;
    let prev = a[body]!;
    let uppers = prev <= 90 ? 1 : 0;
    prev = prev >= 97 ? prev - 97 : prev - 39;
    for (let i = body + 1; i < end; i++) {
      const c = a[i]!;
      let idx: number;
      if (c >= 97) {
        idx = c - 97;
      } else {
        idx = c - 39;
        uppers++;
      }
      units += WORD_PAIR[prev * 52 + idx]!;
      prev = idx;
    }
    // The pair rule's average miss for words of this length, shape and prefix.
    const letters = end - body;
    const shape = uppers === 0 ? 0 : uppers === letters && letters > 1 ? 2 : uppers === 1 && a[body]! <= 90 ? 1 : 3;
    const prefix = body === start ? 0 : a[start]! === 32 ? 1 : 2;
    return units + WORD_LENGTH[(prefix * 4 + shape) * 32 + (letters < 31 ? letters : 31)]!;
  }

  /** Prices the punctuation run at start: an optional space, marks and symbols, then newlines. */
  function pricePunct(a: Uint16Array, start: number, to: number): number {
    let h = Math.imul((0x811c9dc5 | 0) ^ a[start]!, 0x01000193);
    let foreign = false;
    let i = start + 1;
    for (; i < to; i++) {
      const c = a[i]!;
      const k = CLASS[c]!;
      if (k !== PUNCT) {
        if (k === XPUNCT) {
          foreign = true;
        } else if (k === HIGH && (classAt(a, i, to) & 15) === XPUNCT) {
          foreign = true;
          if ((classAt(a, i, to) & PAIR_BIT) !== 0) {
            h = Math.imul(h ^ c, 0x01000193);
            i++;
            h = Math.imul(h ^ a[i]!, 0x01000193);
            continue;
          }
          // A high surrogate without its low one is a symbol of its own.
        } else {
          break;
        }
      }
      h = Math.imul(h ^ c, 0x01000193);
    }
    const marks = i;
    for (; i < to; i++) {
      const c = a[i]!;
      if (c !== 10 && c !== 13) break;
      h = Math.imul(h ^ c, 0x01000193);
    }
    lastEnd = i;
    const exact = known(h === 0 ? 1 : h);
    if (exact >= 0) return exact;
    let units = C.punctBase + (i > marks ? C.punctNewline : 0);
    let prev = -1; // PUNCT_INDEX of the previous ASCII mark (33: a leading space), -2 after a symbol
    for (let j = start; j < marks; j++) {
      const c = a[j]!;
      if (c < 128) {
        const idx = c === 32 ? 33 : PUNCT_INDEX[c]!;
        if (prev >= 0) units += PUNCT_PAIR[prev * 34 + idx]!;
        else if (prev === -2) units += C.symbolSwitch;
        prev = idx;
      } else if (foreign) {
        let cp = c;
        if (CLASS[c] === HIGH && j + 1 < marks && (a[j + 1]! & 0xfc00) === 0xdc00) {
          cp = ((c - 0xd800) << 10) + (a[j + 1]! - 0xdc00) + 0x10000;
          j++;
        }
        units += SYMBOL[symbolOf(cp)]!;
        if (prev >= 0) units += C.symbolSwitch;
        prev = -2;
      }
    }
    return units;
  }

  /** Prices the white-space piece [start, end). */
  function priceSpace(a: Uint16Array, start: number, end: number, weigh: boolean): number {
    const first = a[start]!;
    let i = start + 1;
    while (i < end && a[i]! === first) i++;
    let units: number;
    if (i === end) {
      units = spaceRun(first, end - start);
    } else {
      units = known(hashCodes(a, start, end));
      if (units < 0) {
        units = spaceRun(first, i - start);
        while (i < end) {
          const c = a[i]!;
          let j = i + 1;
          while (j < end && a[j]! === c) j++;
          units += spaceRun(c, j - i) - C.spaceJoin;
          i = j;
        }
      }
    }
    if (weigh && end - start > LONG_SPACE) {
      const byLength = Math.ceil((end - start) / SPACE_CHARS_PER_TOKEN) * 1000;
      if (byLength > units) units = byLength;
    }
    return units;
  }

  /**
   * Thousandths of a token in text[from, to). `weigh` charges long white space by length.
   * Units add up: for any cut at the start of a line that holds something besides white
   * space, units(a) + units(b) === units(a + b).
   */
  /** The scan over the code units a[0, to); a sink is told places from `base` on. */
  function scanCodes(a: Uint16Array, to: number, weigh: boolean, sink: ChunkSink | undefined, base: number): number {
    let total = 0;
    let i = 0;
    while (i < to) {
      const start = i;
      const c = a[i]!;
      if (c < 128) {
        // ASCII: what the piece is follows from its first two characters (see START), and
        // each kind is hashed and priced in the one pass that finds its end.
        const start2 = START[(c << 7) | Math.min(a[i + 1]!, 127)]!; // (END after the text)
        if (start2 <= START_PREFIXED) {
          // ASCII letters, alone or after one prefix character.
          const prefixed = start2 - START_WORD; // 1 or 0
          const mask = -prefixed;
          const body = i + prefixed;
          let d = a[body]!;
          let h = FNV ^ ((HASH_ONE[c]! ^ FNV) & mask);
          h = Math.imul(h ^ d, 0x01000193);
          let j = body + 1;
          for (; ; j++) {
            d = a[j]!;
            if (((d | 32) - 97) >>> 0 >= 26) break; // not an ASCII letter (END is none)
            h = Math.imul(h ^ d, 0x01000193);
          }
          // A word that goes on in other letters takes the general path below.
          if (d < 128 || j >= to || (CLASS[d] !== XLETTER && CLASS[d] !== HIGH)) {
            let units = known(h === 0 ? 1 : h);
            // Known: 86% of ASCII words. Else the rule, as priceWord's.
            if (units < 0) units = C.wordBase + prefixUnits(a, start, body) + priceLetters(a, start, body, j);
            total += units;
            i = j;
            if (sink !== undefined) sink(CHUNK_WORD, base + start, base + i, units);
            continue;
          }
        } else if (start2 === START_DIGITS) {
          // Up to three ASCII digits: one token (a group that goes on in other digits takes the
          // general path). Counted without branches; END stops a group at the end of the text.
          const d1 = isDigit(a[i + 1]!);
          const j = i + 1 + d1 + (d1 & isDigit(a[i + 2]!));
          if (j - i === 3 || j >= to || a[j]! < 128) {
            total += 1000;
            i = j;
            if (sink !== undefined) sink(CHUNK_DIGITS, base + start, base + i, 1000);
            continue;
          }
        } else if (start2 === START_MARKS) {
          // ASCII marks (after an optional space) and trailing newlines.
          let h = HASH_ONE[c]!;
          let j = i + 1;
          let d = 0;
          for (; ; j++) {
            d = a[j]!;
            if (CLASS[d] !== PUNCT) break; // (END is no mark)
            h = Math.imul(h ^ d, 0x01000193);
          }
          // Marks that go on in other symbols take the general path below.
          if (d < 128 || j >= to || (CLASS[d] !== XPUNCT && CLASS[d] !== HIGH)) {
            const marks = j;
            while (j < to && ((d = a[j]!) === 10 || d === 13)) {
              h = Math.imul(h ^ d, 0x01000193);
              j++;
            }
            let units = known(h === 0 ? 1 : h);
            if (units < 0) {
              // Not known (2% of runs of marks): one token and the pairs' cut chances.
              units = C.punctBase + (j > marks ? C.punctNewline : 0);
              let prev = c === 32 ? 33 * 34 : PUNCT_INDEX[c]! * 34;
              for (let k = i + 1; k < marks; k++) {
                const idx = PUNCT_INDEX[a[k]!]!;
                units += PUNCT_PAIR[prev + idx]!;
                prev = idx * 34;
              }
            }
            total += units;
            i = j;
            if (sink !== undefined) sink(CHUNK_PUNCT, base + start, base + i, units);
            continue;
          }
        } else if (start2 === START_MARK) {
          // One mark before a digit or white space: its price is known in advance.
          const units = MARK_UNITS[c]!;
          total += units;
          i++;
          if (sink !== undefined) sink(CHUNK_PUNCT, base + start, base + i, units);
          continue;
        } else if (start2 === START_SPACE) {
          // One white-space character before something else: a piece of one token.
          total += 1000;
          i++;
          if (sink !== undefined) sink(CHUNK_SPACE, base + start, base + i, 1000);
          continue;
        } else if (start2 === START_BLANK) {
          // More white space: up to its last newline, else all but its last character when
          // more follows (there are at least two).
          let j = i + 2;
          let lastNewline = a[i + 1] === 10 || a[i + 1] === 13 ? i + 1 : c === 10 || c === 13 ? i : -1;
          let mixed = a[i + 1]! ^ c; // 0 while the run is one character repeated
          for (; ; j++) {
            const w = a[j]!;
            const wk = CLASS[w]!;
            if (wk === NEWLINE) lastNewline = j;
            else if (wk !== SPACE && wk !== WS) break; // (END is no white space)
            mixed |= w ^ c;
          }
          i = lastNewline >= 0 ? lastNewline + 1 : j === to ? j : j - 1;
          // A newline before indentation, or indentation: one character, or one repeated.
          const n = i - start;
          const units = n === 1 ? 1000 : mixed === 0 && n <= LONG_SPACE ? spaceRun(c, n) : priceSpace(a, start, i, weigh);
          total += units;
          if (sink !== undefined) sink(CHUNK_SPACE, base + start, base + i, units);
          continue;
        }
      }
      const k = c < 128 ? CLASS[c]! : classAt(a, i, to);
      const kind = k & 15;
      let units: number;
      let chunk: number;
      if (kind <= XLETTER) {
        units = priceWord(a, i, i, to);
        chunk = CHUNK_WORD;
        i = lastEnd;
      } else if (kind === DIGIT || kind === XDIGIT) {
        // Up to three digits, one token (others cost a little more).
        units = 1000;
        let n = 0;
        while (i < to && n < 3) {
          const d = a[i]!;
          if (d >= 48 && d <= 57) {
            i++;
          } else {
            const dk = d < 128 ? CLASS[d]! : classAt(a, i, to);
            if ((dk & 15) !== XDIGIT) break;
            units += C.foreignDigit;
            i += dk & PAIR_BIT ? 2 : 1;
          }
          n++;
        }
        chunk = CHUNK_DIGITS;
      } else if (c === 39 && contraction(a, i, to) > 0) {
        i += contraction(a, i, to);
        units = C.contraction;
        chunk = CHUNK_CONTRACTION;
      } else {
        const next = i + (k & PAIR_BIT ? 2 : 1);
        let nk = -1;
        if (next < to) {
          const d = a[next]!;
          nk = d < 128 ? CLASS[d]! : classAt(a, next, to) & 15;
        }
        if (kind !== NEWLINE && nk >= 0 && nk <= XLETTER) {
          units = priceWord(a, i, next, to);
          chunk = CHUNK_WORD;
          i = lastEnd;
        } else if (kind === PUNCT || kind === XPUNCT || (c === 32 && (nk === PUNCT || nk === XPUNCT))) {
          units = pricePunct(a, i, to);
          chunk = CHUNK_PUNCT;
          i = lastEnd;
        } else {
          // White space: up to its last newline, else all but its last character when more follows.
          let j = i;
          let lastNewline = -1;
          while (j < to) {
            const wk = CLASS[a[j]!]!;
            if (wk === NEWLINE) lastNewline = j;
            else if (wk !== SPACE && wk !== WS) break;
            j++;
          }
          if (lastNewline >= 0) i = lastNewline + 1;
          else if (j === to) i = j;
          else if (j - i >= 2) i = j - 1;
          else i = i + 1;
          units = priceSpace(a, start, i, weigh);
          chunk = CHUNK_SPACE;
        }
      }
      total += units;
      if (sink !== undefined) sink(chunk, base + start, base + i, units);
    }
    return total;
  }

  /**
   * Thousandths of a token in text[from, to). `weigh` charges long white space by length.
   * Units add up: for any cut at the start of a line that holds something besides white
   * space, units(a) + units(b) === units(a + b).
   */
  return function scan(text: string, from: number, to: number, weigh: boolean, sink?: ChunkSink): number {
    const n = to - from;
    if (!(n > 0)) return 0;
    if (scanning) return scanCodes(codeUnits(text, from, n, new Uint16Array(n + 2)), n, weigh, sink, from);
    scanning = true;
    try {
      return scanCodes(codeUnits(text, from, n, undefined), n, weigh, sink, from);
    } finally {
      scanning = false;
    }
  };
}
/** The calibrated estimate's scan. */
export const scan: Scan = createScan(TABLES);

/** Thousandths of a token: the unrounded estimate, for adding up parts. */
export function units(text: string): number {
  return scan(text, 0, text.length, false);
}

/** Thousandths of a token by `weigh`'s measure. */
export function weighUnits(text: string): number {
  return scan(text, 0, text.length, true);
}

/** Whole tokens from thousandths. */
export function tokensOf(units: number): number {
  return Math.round(units / 1000);
}

/** The token estimate of text (cl100k-class: about 1% to 1.6% off on average over text it was not calibrated on, docs/fit.md). */
export function count(text: string): number {
  return tokensOf(scan(text, 0, text.length, false));
}

/**
 * Tokens as the platform measures an answer: the estimate, with each white-space piece
 * longer than LONG_SPACE characters charged one token per SPACE_CHARS_PER_TOKEN characters.
 */
export function weigh(text: string): number {
  return tokensOf(scan(text, 0, text.length, true));
}
