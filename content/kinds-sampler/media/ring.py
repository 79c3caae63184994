#!/usr/bin/env python3
"""Draws ring.png, the diagram of the kinds-sampler's first question: four GPUs joined in a
ring, each sending to the next. Standard library only (zlib, struct); run it from this
directory to make the file again, byte for byte."""
import struct
import zlib

W, H = 360, 240
PALETTE = [(255, 255, 255), (32, 64, 128), (222, 232, 246), (200, 80, 40)]  # bg, ink, box, arrow
px = [[0] * W for _ in range(H)]


def rect(x0, y0, x1, y1, c):
    for y in range(max(0, y0), min(H, y1)):
        for x in range(max(0, x0), min(W, x1)):
            px[y][x] = c


def box(x, y, w, h):
    rect(x, y, x + w, y + h, 1)
    rect(x + 3, y + 3, x + w - 3, y + h - 3, 2)


# A 5×7 font for the few letters the labels need.
FONT = {
    "G": ["01110", "10001", "10000", "10111", "10001", "10001", "01110"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "U": ["10001", "10001", "10001", "10001", "10001", "10001", "01110"],
    "0": ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    "1": ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    "2": ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    "3": ["11110", "00001", "00001", "01110", "00001", "00001", "11110"],
    " ": ["00000"] * 7,
}


def text(s, x, y, scale=3):
    for ch in s:
        for r, row in enumerate(FONT[ch]):
            for c, bit in enumerate(row):
                if bit == "1":
                    rect(x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, 1)
        x += 6 * scale


def arrow_h(x0, x1, y):
    """A horizontal arrow from x0 to x1 (either way), 4 px thick, with its head."""
    step = 1 if x1 > x0 else -1
    rect(min(x0, x1), y - 2, max(x0, x1), y + 2, 3)
    for i in range(10):
        x = x1 - step * i
        rect(x, y - i, x + 1, y + i + 1, 3)


def arrow_v(x, y0, y1):
    step = 1 if y1 > y0 else -1
    rect(x - 2, min(y0, y1), x + 2, max(y0, y1), 3)
    for i in range(10):
        y = y1 - step * i
        rect(x - i, y, x + i + 1, y + 1, 3)


BW, BH = 110, 50
boxes = {0: (30, 30), 1: (220, 30), 2: (220, 160), 3: (30, 160)}
for n, (x, y) in boxes.items():
    box(x, y, BW, BH)
    text(f"GPU {n}", x + 12, y + 15)
arrow_h(30 + BW + 4, 220 - 6, 55)          # 0 → 1
arrow_v(220 + BW // 2, 30 + BH + 4, 160 - 6)  # 1 → 2
arrow_h(220 - 4, 30 + BW + 6, 185)          # 2 → 3
arrow_v(30 + BW // 2, 160 - 4, 30 + BH + 6)   # 3 → 0


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


raw = b"".join(b"\0" + bytes(row) for row in px)
png = (
    b"\x89PNG\r\n\x1a\n"
    + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 3, 0, 0, 0))
    + chunk(b"PLTE", b"".join(bytes(c) for c in PALETTE))
    + chunk(b"IDAT", zlib.compress(raw, 9))
    + chunk(b"IEND", b"")
)
with open("ring.png", "wb") as f:
    f.write(png)
