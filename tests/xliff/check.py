#!/usr/bin/env python3
"""Reads quizd's XLIFF and PO exports with independent tools: XML Schema validation against the
OASIS XLIFF 2.x core schema (xmlschema), and a read-back with the Translate Toolkit's XLIFF 2
storage (the library behind Pootle and Weblate's converters), checking that every unit's id,
source and target survive; each PO file read by `polib` and by the Translate Toolkit's PO
storage, and, where the same version's XLIFF export lies beside it (`<name>.xlf` for
`<name>.po`), compared with it unit by unit: msgctxt = unit id, msgid = source, msgstr = target
("" for none), fuzzy = a stale target, and every fuzzy entry carries its previous msgid.

The export is written by `translations::an_xliff_round_trip_through_a_translators_edit_…`
into target/tmp/xliff-check/. The schema (xliff_core_2.0.xsd, OASIS; XLIFF 2.1 keeps the 2.0
core schema and namespace) is committed in tests/xliff/schema/ with the xml.xsd it imports
(see NOTICE.md there), so validation needs no network and always runs: a missing schema or an
invalid document fails.

Usage: check.py tests/xliff/schema/xliff_core_2.0.xsd target/tmp/xliff-check/*.xlf \
           target/tmp/xliff-check/*.po
"""
import os
import sys
import xml.etree.ElementTree as ET

import polib
import xmlschema
from translate.storage import pypo, xliff2

NS = "urn:oasis:names:tc:xliff:document:2.0"


def xliff_units(path):
    """id -> (source, target or None, stale) by our own reading of an XLIFF export."""
    root = ET.parse(path).getroot()
    out = {}
    for unit in root.iter(f"{{{NS}}}unit"):
        seg = unit.find(f"{{{NS}}}segment")
        target = seg.find(f"{{{NS}}}target")
        out[unit.get("id")] = (seg.find(f"{{{NS}}}source").text or "",
                               None if target is None else target.text or "",
                               seg.get("subState") == "quizd:stale")
    return out


def check_po(path):
    failed = 0
    po = polib.pofile(path, check_for_duplicates=True, wrapwidth=0)
    entries = [e for e in po if not e.obsolete]
    lang = po.metadata.get("Language")
    if not lang or po.metadata.get("Content-Type") != "text/plain; charset=UTF-8":
        print(f"POLIB {path}: header {po.metadata!r}")
        failed += 1
    got = {}
    for e in entries:
        if not e.msgctxt:
            print(f"POLIB {path} line {e.linenum}: no msgctxt")
            failed += 1
            continue
        got[e.msgctxt] = (e.msgid, e.msgstr, "fuzzy" in e.flags)
        if "fuzzy" in e.flags and not e.previous_msgid:
            print(f"POLIB {path} {e.msgctxt}: fuzzy without a previous msgid")
            failed += 1
        if not e.comment:
            print(f"POLIB {path} {e.msgctxt}: no comment for the translator")
            failed += 1
    # The Translate Toolkit's reading must agree with polib's.
    with open(path, "rb") as f:
        store = pypo.pofile(f)
    tt = {u.getcontext(): (str(u.source), str(u.target or ""), u.isfuzzy())
          for u in store.units if not u.isheader() and not u.isobsolete()}
    if tt != got:
        diff = sorted(k for k in set(tt) | set(got) if tt.get(k) != got.get(k))
        print(f"TOOLKIT {path}: polib and pypo differ on {diff[:5]}")
        failed += 1
    twin = os.path.splitext(path)[0] + ".xlf"
    compared = "no XLIFF beside it"
    if os.path.exists(twin):
        units = xliff_units(twin)
        want = {uid: (source, target or "", stale) for uid, (source, target, stale) in units.items()}
        if want != got:
            diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            print(f"PO/XLIFF {path}: differ on {diff[:5]}: "
                  f"{[(want.get(k), got.get(k)) for k in diff[:2]]}")
            failed += 1
        compared = f"same units as {os.path.basename(twin)}" if want == got else "DIFFERENT"
    fuzzy = sum(1 for _, _, f in got.values() if f)
    translated = sum(1 for _, t, f in got.values() if t and not f)
    print(f"po {os.path.basename(path)}: {len(got)} entries ({translated} translated, {fuzzy} fuzzy), "
          f"language {lang}, polib and pypo agree: {tt == got}, {compared}")
    return failed


def main(xsd, paths):
    # The committed copy, with its own xml.xsd beside it: nothing is fetched.
    schema = xmlschema.XMLSchema(xsd)
    failed = 0
    po_paths = [p for p in paths if p.endswith(".po")]
    paths = [p for p in paths if p.endswith(".xlf")]
    if not paths or not po_paths:
        print("MISSING: no exported XLIFF or PO; run the translations tests first")
        return 1
    for path in po_paths:
        failed += check_po(path)
    for path in paths:
        errors = list(schema.iter_errors(path))
        for e in errors[:5]:
            print(f"SCHEMA {path}: {e.reason} at {e.path}")
        failed += bool(errors)
        # Our own reading of the document, to compare the toolkit's with.
        expected = {k: (source, target) for k, (source, target, _) in xliff_units(path).items()}
        with open(path, "rb") as f:
            store = xliff2.Xliff2File.parsestring(f.read())
        units = [u for u in store.units if not u.isheader()]
        got = {u.getid(): (str(u.source), None if not u.target else str(u.target)) for u in units}
        if set(got) != set(expected):
            print(f"TOOLKIT {path}: unit ids differ: {sorted(set(got) ^ set(expected))[:5]}")
            failed += 1
        for uid, (source, target) in expected.items():
            if uid in got and got[uid] != (source, target):
                print(f"TOOLKIT {path} {uid}: {got[uid]!r} != {(source, target)!r}")
                failed += 1
        translated = sum(1 for _, t in expected.values() if t)
        print(f"xliff {os.path.basename(path)}: {len(expected)} units ({translated} with a target), "
              f"schema {'valid' if not errors else 'INVALID'}, "
              f"toolkit read {len(got)} units")
    print(f"xliff and po: {'ok' if not failed else f'{failed} failures'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
