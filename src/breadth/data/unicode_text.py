"""Unicode spellings of numbers as ASCII, before any answer is read.

NFKC alone misreads math: it turns "3\u00b2" into "32" and "\u00bd" into "1\u20442" (read as 1),
and leaves the minus sign U+2212 alone (so "\u22127" reads as 7). Superscripts, subscripts,
vulgar fractions and minus signs are mapped first; then NFKC and other scripts' digits.
"""

from __future__ import annotations

import re
import unicodedata

_SUPERSCRIPTS = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b",
                              "0123456789+-")
_SUBSCRIPTS = str.maketrans("\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089",
                            "0123456789")
_SUPERSCRIPT_RUN = re.compile("[\u2070\u00b9\u00b2\u00b3\u2074-\u207b]+")
_SUBSCRIPT_RUN = re.compile("[\u2080-\u2089]+")
_VULGAR = re.compile("(\\d*)([\u00bc-\u00be\u2150-\u215e])")
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2796": "-"})


def normalize_text(text: str) -> str:
    """Unicode digits and signs as ASCII: NFKC (fullwidth digits), other scripts' decimal
    digits, the minus sign U+2212, superscripts as powers ("3\u00b2" -> "3^{2}", not NFKC's
    "32") and vulgar fractions as fractions ("\u00bd" -> "1/2", "3\u00bd" -> "7/2", not "31/2").

    >>> normalize_text("\\uff13\\uff13 and \\u0663\\u0663")
    '33 and 33'
    >>> normalize_text("\\u22127, 3\\u00b2, 3\\u00bd")
    '-7, 3^{2}, 7/2'
    """
    if text.isascii():
        return text
    text = text.translate(_MINUS_SIGNS)
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group(0).translate(_SUPERSCRIPTS) + "}", text)
    text = _SUBSCRIPT_RUN.sub(lambda m: "_{" + m.group(0).translate(_SUBSCRIPTS) + "}", text)
    text = _VULGAR.sub(_vulgar_as_fraction, text)
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    return "".join(
        str(unicodedata.decimal(char)) if not char.isascii() and char.isdecimal() else char
        for char in text
    )


def _vulgar_as_fraction(match: re.Match[str]) -> str:
    whole, glyph = match.group(1), match.group(2)
    # NFKC spells "\u00bd" as "1\u20442" (fraction slash); the value is exact either way.
    numerator, _, denominator = unicodedata.normalize("NFKC", glyph).partition("\u2044")
    if not denominator:  # "\u2189" (0/3) and friends have no slash: leave them to NFKC
        return match.group(0)
    top, bottom = int(numerator or 1), int(denominator)
    if whole:
        top += int(whole) * bottom
    return f"{top}/{bottom}"
