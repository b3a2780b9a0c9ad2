#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# png_pixels: whether a PNG (a browser's screenshot) shows anything: decodes it with zlib and
# struct only (8-bit RGB/RGBA/grey, non-interlaced, the five row filters) and fails when every
# pixel equals the first (a blank page). Prints the size and the distinct colours seen.
# usage: png_pixels.py FILE.png
import struct
import sys
import zlib


def decode(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or bpp is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}")
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


w, h, bpp, rows = decode(open(sys.argv[1], "rb").read())
first = rows[0][:bpp]
colours = {rows[y][x:x + bpp] for y in range(0, h, 7) for x in range(0, w * bpp, 7 * bpp)}
blank = all(r == first * w for r in rows)
print(f"{sys.argv[1]}: {w}x{h}, {len(colours)} colours in a 1/49 sample")
if blank:
    print("FAIL: every pixel is the same: a blank page")
sys.exit(1 if blank else 0)
