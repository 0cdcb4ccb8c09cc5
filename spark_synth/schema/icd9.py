"""A public ICD-9-CM hierarchy for diagnosis-code columns: code → category → block of ten
categories → chapter.

The chapters are the published ICD-9-CM chapter ranges (plus the V and E supplementary
classifications); blocks are ranges of ten consecutive categories (e.g. 250-259), which nest in
the chapters because every chapter starts at a multiple of ten. Nothing here depends on any data. :func:`with_icd9_hierarchy` adds the hierarchy
to the named columns of a schema mapping (as read from a schema file), for the ``fpt`` engine's
Census-style hierarchical workload.
"""

from __future__ import annotations

#: (first 3-digit category, last, chapter name) of the numeric ICD-9-CM codes.
CHAPTERS = (
    (1, 139, "001-139 infectious and parasitic"),
    (140, 239, "140-239 neoplasms"),
    (240, 279, "240-279 endocrine, nutritional, metabolic, immunity"),
    (280, 289, "280-289 blood"),
    (290, 319, "290-319 mental disorders"),
    (320, 389, "320-389 nervous system and sense organs"),
    (390, 459, "390-459 circulatory system"),
    (460, 519, "460-519 respiratory system"),
    (520, 579, "520-579 digestive system"),
    (580, 629, "580-629 genitourinary system"),
    (630, 679, "630-679 pregnancy and childbirth"),
    (680, 709, "680-709 skin and subcutaneous tissue"),
    (710, 739, "710-739 musculoskeletal and connective tissue"),
    (740, 759, "740-759 congenital anomalies"),
    (760, 779, "760-779 perinatal conditions"),
    (780, 799, "780-799 symptoms and ill-defined conditions"),
    (800, 999, "800-999 injury and poisoning"),
)
SUPPLEMENTARY = {"V": "V01-V91 factors influencing health status", "E": "E000-E999 external causes of injury"}


def category(code: str) -> str:
    """The 3-character category of an ICD-9-CM code: '250.01' → '250', '8' → '008', 'V57.1' → 'V57',
    'E909' → 'E909' (E codes are categorised by their four characters)."""
    text = str(code).strip().upper()
    stem = text.split(".")[0]
    if not stem:
        raise ValueError(f"'{code}' is not an ICD-9-CM code")
    if stem[0] == "V":
        return "V" + stem[1:].zfill(2)
    if stem[0] == "E":
        return "E" + stem[1:].zfill(3)
    if not stem.isdigit():
        raise ValueError(f"'{code}' is not an ICD-9-CM code (digits, or V/E followed by digits)")
    return stem.zfill(3)


def block(category_code: str) -> str:
    """The block of ten categories holding a category: '250' → '250-259', 'V57' → 'V50-V59'."""
    prefix, digits = ("", category_code) if category_code[0].isdigit() else (category_code[0], category_code[1:])
    low = int(digits) // 10 * 10
    width = len(digits)
    return f"{prefix}{low:0{width}d}-{prefix}{low + 9:0{width}d}"


def chapter(category_code: str) -> str:
    """The ICD-9-CM chapter of a 3-character category."""
    if category_code[0] in SUPPLEMENTARY:
        return SUPPLEMENTARY[category_code[0]]
    number = int(category_code)
    for first, last, name in CHAPTERS:
        if first <= number <= last:
            return name
    raise ValueError(f"ICD-9-CM category '{category_code}' is outside the chapters 001-999")


def icd9_levels(codes) -> list[dict]:
    """The hierarchy levels (schema-file form) of a list of ICD-9-CM codes."""
    categories = {str(c): category(c) for c in codes}
    blocks = {cat: block(cat) for cat in dict.fromkeys(categories.values())}
    chapters = {}
    for cat, blk in blocks.items():
        chapters.setdefault(blk, chapter(cat))
    return [{"name": "category", "parents": categories}, {"name": "block", "parents": blocks},
            {"name": "chapter", "parents": chapters}]


def with_icd9_hierarchy(schema: dict, columns: list[str]) -> dict:
    """A copy of a schema mapping where each of ``columns`` uses one shared ``icd9`` hierarchy built
    from the union of their categories (so the levels are the same public groups in every column)."""
    by_name = {c["name"]: c for c in schema["columns"]}
    missing = [c for c in columns if c not in by_name]
    if missing:
        raise ValueError(f"the schema has no columns {missing}")
    codes = list(dict.fromkeys(str(v) for name in columns for v in by_name[name]["categories"]))
    out = dict(schema)
    out["hierarchies"] = {**schema.get("hierarchies", {}), "icd9": icd9_levels(codes)}
    out["columns"] = [{**c, "hierarchy": "icd9"} if c["name"] in columns else c for c in schema["columns"]]
    return out
