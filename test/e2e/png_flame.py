#!/usr/bin/env python3
"""png_flame.py: is this screenshot a drawn flame graph?

    png_flame.py SHOT.png

Decodes the PNG with the standard library only (zlib; 8-bit RGB/RGBA,
non-interlaced, as Chromium writes screenshots) and checks what a person sees,
independent of fonts: the picture is not blank, a good share of it is covered
by the warm colours our frames are filled with, and those boxes form several
stacked rows (a flame graph, not one bar).  Prints one "ok"/"FAIL" line per
check; exit 1 if any failed.
"""
import struct
import sys
import zlib


def decode(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b'IHDR':
            hdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
    width, height, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError('unsupported PNG: depth %d type %d interlace %d' % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b''.join(idat))
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def warm(r, g, b):
    # Our frames: red-to-yellow fills (r high, b low) or the search magenta.
    return (r >= 180 and b <= 120 and r - b >= 100) or (r >= 200 and g <= 40 and b >= 200)


def main():
    width, height, bpp, rows = decode(sys.argv[1])
    failed = 0

    def check(msg, cond):
        nonlocal failed
        print(('ok   ' if cond else 'FAIL ') + 'screenshot: ' + msg)
        failed += not cond

    colours, warm_px, warm_rows = set(), 0, []
    for y in range(0, height, 2):
        row, n = rows[y], 0
        for x in range(0, width * bpp, 2 * bpp):
            px = (row[x], row[x + 1], row[x + 2])
            colours.add(px)
            if warm(*px):
                n += 1
        warm_px += n
        warm_rows.append(n > width // 40)  # a row crossed by frames
    sampled = ((height + 1) // 2) * ((width + 1) // 2)
    share = warm_px / sampled if sampled else 0
    bands, inside = 0, False  # runs of rows with frames, separated by gaps
    for has in warm_rows:
        if has and not inside:
            bands += 1
        inside = has
    check('%dx%d picture' % (width, height), width >= 200 and height >= 100)
    check('not blank (%d colours)' % len(colours), len(colours) >= 16)
    check('frames drawn (%.0f%% warm-coloured)' % (100 * share), 0.05 <= share <= 0.95)
    stacked = sum(warm_rows) * 2
    check('frames stacked (%d px of rows with frames, %d bands)' % (stacked, bands),
          stacked >= 60 and bands >= 1)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
