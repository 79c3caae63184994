#!/usr/bin/env python3
"""Reads quizd's XLIFF export with independent tools: XML Schema validation against the OASIS
XLIFF 2.x core schema (xmlschema), and a read-back with the Translate Toolkit's XLIFF 2 storage
(the library behind Pootle and Weblate's converters), checking that every unit's id, source and
target survive.

The export is written by `translations::an_xliff_round_trip_through_a_translators_edit_…`
into target/tmp/xliff-check/. The schema (xliff_core_2.0.xsd, OASIS; XLIFF 2.1 keeps the 2.0
core schema and namespace) is not committed: .ci/run downloads it from docs.oasis-open.org
into target/xliff-schema/. Its `xml:` import is served from xmlschema's bundled xml.xsd, so
validation needs no network.

Usage: check.py target/xliff-schema/xliff_core_2.0.xsd target/tmp/xliff-check/*.xlf
"""
import os
import sys
import xml.etree.ElementTree as ET

import xmlschema
from translate.storage import xliff2

NS = "urn:oasis:names:tc:xliff:document:2.0"


def main(xsd, paths):
    xml_xsd = os.path.join(os.path.dirname(xmlschema.__file__), "schemas", "XML", "xml.xsd")
    # Where OASIS's site cannot be reached (this project's CI machines reach only package
    # registries), the schema cannot be had: say so loudly and still read back with the toolkit.
    schema = None
    if os.path.exists(xsd) and os.path.getsize(xsd) > 0:
        schema = xmlschema.XMLSchema(xsd, locations=[("http://www.w3.org/XML/1998/namespace", xml_xsd)])
    else:
        print(f"SCHEMA NOT CHECKED: {xsd} is missing (docs.oasis-open.org unreachable); "
              "the toolkit read-back still runs")
    failed = 0
    if not paths:
        print("MISSING: no exported XLIFF; run the translations tests first")
        return 1
    for path in paths:
        errors = list(schema.iter_errors(path)) if schema else []
        for e in errors[:5]:
            print(f"SCHEMA {path}: {e.reason} at {e.path}")
        failed += bool(errors)
        # Our own reading of the document, to compare the toolkit's with.
        root = ET.parse(path).getroot()
        expected = {}
        for unit in root.iter(f"{{{NS}}}unit"):
            seg = unit.find(f"{{{NS}}}segment")
            target = seg.find(f"{{{NS}}}target")
            expected[unit.get("id")] = (seg.find(f"{{{NS}}}source").text or "",
                                        None if target is None else target.text or "")
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
              f"schema {'not checked' if not schema else 'valid' if not errors else 'INVALID'}, "
              f"toolkit read {len(got)} units")
    print(f"xliff: {'ok' if not failed else f'{failed} failures'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
