#!/usr/bin/python3
"""Makes cjk-subset.otf, the window's bundled CJK fallback, from Noto Sans
CJK SC (SIL OFL 1.1; Debian's fonts-noto-cjk): every Hanzi of GB 2312 and of
Big5's common level (so Simplified and Traditional node names), kana, the
Hangul of KS X 1001, CJK punctuation and full-width forms, and the space. No Latin or
Cyrillic: those stay with Fyne's own font (Noto Sans). The space is there
because Fyne's text segmenter keeps a space in the run of the font before
it, and it takes Noto Sans's advance and the line metrics of Noto Sans, so
that a line measures the same whichever font Fyne asks for the space. Run by `make cjk-font` (needs python3-fonttools and fonts-noto-cjk)."""

import sys
from fontTools import subset
from fontTools.ttLib import TTCollection

SRC = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
FACE = "Noto Sans CJK SC"
NAME = "Skiff CJK Subset"


def chars(codec, rows, cols):
    out = set()
    for hi in rows:
        for lo in cols:
            try:
                out.update(bytes([hi, lo]).decode(codec))
            except UnicodeDecodeError:
                pass
    return out


def wanted():
    cs = set()
    cs |= chars("gb2312", range(0xB0, 0xF8), range(0xA1, 0xFF))  # GB 2312 Hanzi, both levels
    cs |= chars("big5", range(0xA4, 0xC7), list(range(0x40, 0x7F)) + list(range(0xA1, 0xFF)))  # Big5 level 1
    cs |= chars("euc_kr", range(0xB0, 0xC9), range(0xA1, 0xFF))  # KS X 1001 Hangul
    cs |= {chr(c) for c in range(0x3000, 0x3100)}  # CJK punctuation, kana
    cs |= {chr(c) for c in range(0xFF01, 0xFF5F)}  # full-width forms
    cs |= {chr(c) for c in range(0xFF61, 0xFFA0)}  # half-width kana
    return {ord(c) for c in cs if ord(c) >= 0x2E80} | {0x20}  # nothing else Fyne's font has


def main(out):
    coll = TTCollection(SRC)
    font = next(f for f in coll.fonts if f["name"].getDebugName(1) == FACE)
    opts = subset.Options()
    opts.layout_features = []  # horizontal text, one shape per character
    opts.drop_tables += ["vhea", "vmtx", "VORG", "GSUB", "GPOS"]
    opts.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
    opts.notdef_outline = True
    opts.hinting = False
    s = subset.Subsetter(opts)
    s.populate(unicodes=wanted())
    s.subset(font)
    # Noto Sans's (Fyne's text font) vertical metrics and space advance.
    hhea, os2 = font["hhea"], font["OS/2"]
    hhea.ascent, hhea.descent, hhea.lineGap = 1069, -293, 0
    os2.sTypoAscender, os2.sTypoDescender, os2.sTypoLineGap = 1069, -293, 0
    os2.usWinAscent, os2.usWinDescent = 1069, 293
    space = font.getBestCmap()[0x20]
    font["hmtx"][space] = (260, 0)
    name = font["name"]
    for rec in name.names:
        if rec.nameID in (1, 4):
            rec.string = NAME
        elif rec.nameID == 3:
            rec.string = NAME + " (from Noto Sans CJK SC 2.004)"
        elif rec.nameID == 6:
            rec.string = NAME.replace(" ", "")
    font.recalcTimestamp = False  # the same bytes from the same source
    font.save(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cjk-subset.otf")
