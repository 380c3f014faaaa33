// Decodes a .zst file with @hpcc-js/wasm-zstd, the zstd library Konata decodes .kanata.zst
// with (its src/core/zstd_stream.ts), chunk by chunk as Konata feeds it, and compares the
// text with the expected one. It tells whether that decoder reads a file of several frames
// (a seekable .kanata.zst) to its end.
//
//   npm install @hpcc-js/wasm-zstd     (in any folder; 1.12.5 was the newest on npm here)
//   node scripts/konata-zstd-check.mjs FILE.zst EXPECTED.kanata [CHUNK_BYTES]
//
// Versions up to 1.12.5 have `reset` and `decompressChunk(data, outputSize)`; Konata's
// current sources call `resetDecompression`, `decompressChunk(data)` and `decompressEnd`,
// which this script uses when they exist.
import { Zstd } from "@hpcc-js/wasm-zstd";
import { readFileSync } from "node:fs";

const [file, expected, chunkSize] = process.argv.slice(2);
const zstd = await Zstd.load();
const raw = readFileSync(file);
const want = readFileSync(expected);
const step = Number(chunkSize || 65536);
const newApi = typeof zstd.resetDecompression === "function";
if (newApi) zstd.resetDecompression();
else zstd.reset();
const parts = [];
for (let i = 0; i < raw.length; i += step) {
  const chunk = raw.subarray(i, i + step);
  parts.push(newApi ? zstd.decompressChunk(chunk) : zstd.decompressChunk(chunk, want.length + 1));
}
if (newApi) zstd.decompressEnd();
const out = Buffer.concat(parts.map((p) => Buffer.from(p)));
console.log(
  `zstd ${zstd.version()}, ${newApi ? "new" : "old"} chunk API: ` +
    (out.equals(want) ? "identical" : `DIFFERENT: ${out.length} of ${want.length} bytes`),
);
process.exit(out.equals(want) ? 0 : 1);
