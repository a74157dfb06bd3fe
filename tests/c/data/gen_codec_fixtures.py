#!/usr/bin/env python3
# Run from the repository root: .venv/bin/python tests/c/data/gen_codec_fixtures.py
# Generates tests/c/data/codec_* fixtures with independent implementations
# (Python's gzip module, pyarrow's codecs); see tests/c/test_compress.c.
import gzip, struct, pyarrow as pa
plain = "".join(f"row {i:04d}: value {i * 7919 % 1000:03d} {'abcdefgh'[i % 8] * (i % 5)}\n" for i in range(120)).encode()
plain = plain[:3000]
d = "tests/c/data/"
open(d + "codec_plain.bin", "wb").write(plain)
half = len(plain) // 2
open(d + "codec_plain.gz", "wb").write(gzip.compress(plain[:half], mtime=0) + gzip.compress(plain[half:], mtime=0))
def pac(codec, data):
    return pa.compress(data, codec=codec, asbytes=True)
open(d + "codec_plain.snappy", "wb").write(pac("snappy", plain))
open(d + "codec_plain.zst", "wb").write(pac("zstd", plain))
open(d + "codec_plain.br", "wb").write(pac("brotli", plain))
raw = pac("lz4_raw", plain)
open(d + "codec_plain.lz4raw", "wb").write(raw)
# Hadoop framing, two frames: [u32 BE decompressed][u32 BE compressed][raw block] x 2
f = b""
for part in (plain[:1000], plain[1000:]):
    blk = pac("lz4_raw", part)
    f += struct.pack(">II", len(part), len(blk)) + blk
open(d + "codec_plain.lz4hadoop", "wb").write(f)
print(len(plain), {k: len(open(d + "codec_plain." + k, "rb").read()) for k in ["gz", "snappy", "zst", "br", "lz4raw", "lz4hadoop"]})
