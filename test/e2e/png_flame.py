#!/usr/bin/env python3
"""png_flame.py: is this screenshot a drawn flame graph?

    png_flame.py [--families main,libc,...] SHOT.png

Decodes the PNG with the standard library only (zlib; 8-bit RGB/RGBA,
non-interlaced, as Chromium writes screenshots) and checks what a person sees,
independent of fonts: the picture is not blank, a good share of it is covered
by the colours our frames are filled with (render/svg.c's per-kind palettes),
and those boxes form several stacked rows (a flame graph, not one bar).  With
--families, each named kind's colour covers a visible area (frames are coloured
by kind).  Prints one "ok"/"FAIL" line per check; exit 1 if any failed.
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


# render/svg.c's fills per kind: (r, g, b) base and spread, as in its kinds[] table.
FAMILIES = {
    'main': ((226, 92, 32), (26, 50, 40)),
    'lib': ((222, 204, 64), (22, 24, 50)),
    'libc': ((128, 172, 228), (30, 30, 26)),
    'python': ((112, 200, 104), (40, 40, 36)),
    'jit': ((86, 204, 200), (30, 30, 30)),
    'self': ((190, 150, 226), (28, 28, 26)),
}


def family(r, g, b):
    for name, (base, spread) in FAMILIES.items():
        if all(base[i] - 1 <= v <= base[i] + spread[i] + 1 for i, v in enumerate((r, g, b))):
            return name
    return None


def frame_px(r, g, b):
    # One of our frames' fills, or the search magenta.
    return family(r, g, b) is not None or (r >= 200 and g <= 40 and b >= 200)


def main():
    args, want = sys.argv[1:], []
    if len(args) >= 2 and args[0] == '--families':
        want, args = args[1].split(','), args[2:]
    width, height, bpp, rows = decode(args[0])
    failed = 0
    per_family = dict((k, 0) for k in FAMILIES)

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
            fam = family(*px)
            if fam:
                per_family[fam] += 1
            if frame_px(*px):
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
    check('frames drawn (%.0f%% in frame colours)' % (100 * share), 0.05 <= share <= 0.95)
    for fam in want:
        got = per_family.get(fam, 0) / sampled if sampled else 0
        check('%s frames have their colour (%.2f%% of the picture)' % (fam, 100 * got),
              got >= 0.002)
    stacked = sum(warm_rows) * 2
    check('frames stacked (%d px of rows with frames, %d bands)' % (stacked, bands),
          stacked >= 60 and bands >= 1)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
