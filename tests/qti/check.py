#!/usr/bin/env python3
"""Validates quizd's QTI 3.0 packages against 1EdTech's published QTI 3.0 XSDs with an
independent validator (xmlschema): every item and test against the ASI schema
(imsqti_asiv3p0_v1p0.xsd), the manifest against the QTI 3.0 profile of IMS Content Packaging
(imsqtiv3p0_imscpv1p2_v1p0.xsd); and checks that every file the manifest names is in the
package and every XML file of the package is named by the manifest.

The packages are written by `qti::the_seed_quizzes_export_as_qti_packages_for_the_schema_check`
(tests/api/qti.rs) into target/tmp/qti-check/. The schema folder (its layout, origin and
notices: tests/qti/SCHEMA.md) holds the schema files unchanged: they import each other and
W3C's schemas by their published purl.imsglobal.org addresses, which are mapped here to the
local copies (and xlink.xsd to the copy that ships with xmlschema), and every remote access is
refused, so validation needs no network: a missing schema file or an invalid document fails.

Usage: check.py <schema folder> target/tmp/qti-check/*.zip
"""
import os
import sys
import time
import xml.etree.ElementTree as ET
import zipfile

import xmlschema

PURL = "https://purl.imsglobal.org/spec/"
ASI_NS = "http://www.imsglobal.org/xsd/imsqtiasi_v3p0"
CP_NS = "http://www.imsglobal.org/xsd/qti/qtiv3p0/imscp_v1p1"
SCHEMAS = ("qtiv3p0/imsqti_asiv3p0_v1p0.xsd", "qtiv3p0/imsqtiv3p0_imscpv1p2_v1p0.xsd")


def uri_mapper(schema_dir):
    """The published schema addresses -> the local copies."""
    local = {
        PURL + "w3/2001/schema/xsd/xml.xsd": "w3/xml.xsd",
        PURL + "w3/2001/schema/xsd/XInclude.xsd": "w3/XInclude.xsd",
        PURL + "mathml/v3p0/schema/xsd/mathml3.xsd": "w3/mathml3/mathml3.xsd",
        PURL + "ssml/v1p1/schema/xsd/ssmlv1p1-core.xsd": "w3/ssml11/ssmlv1p1-core.xsd",
        PURL + "md/v1p3/schema/xsd/imsmd_loose_v1p3p2.xsd": "imsmd_loose_v1p3p2.xsd",
    }
    for f in os.listdir(os.path.join(schema_dir, "qtiv3p0")):
        for scheme in ("https://", "http://"):
            local[scheme + "purl.imsglobal.org/spec/qti/v3p0/schema/xsd/" + f] = "qtiv3p0/" + f
    mapping = {k: os.path.join(schema_dir, v) for k, v in local.items()}
    xlink = os.path.join(os.path.dirname(xmlschema.__file__), "schemas", "XLINK", "xlink.xsd")
    mapping[PURL + "w3/1999/schema/xsd/xlink.xsd"] = xlink
    mapping["http://www.imsglobal.org/xsd/w3/2001/xml.xsd"] = mapping[PURL + "w3/2001/schema/xsd/xml.xsd"]
    for path in list(mapping.values()) + [os.path.join(schema_dir, f) for f in SCHEMAS]:
        if not os.path.exists(path):
            sys.exit(f"MISSING schema file {path} (see tests/qti/SCHEMA.md)")
    return lambda uri: mapping.get(uri, uri)


def main(schema_dir, packages):
    schema_dir = os.path.abspath(schema_dir)
    if not packages:
        print("MISSING: no exported QTI package; run the qti API test first")
        return 1
    started = time.time()
    # allow="local": local files only; any remote address is refused.
    mapper = uri_mapper(schema_dir)
    asi = xmlschema.XMLSchema(os.path.join(schema_dir, SCHEMAS[0]),
                              uri_mapper=mapper, allow="local")
    cp = xmlschema.XMLSchema(os.path.join(schema_dir, SCHEMAS[1]),
                             uri_mapper=mapper, allow="local")
    print(f"schemas loaded in {time.time() - started:.1f}s")
    failed = 0
    for package in packages:
        counts = {"items": 0, "tests": 0, "manifest": 0}
        with zipfile.ZipFile(package) as z:
            names = {n for n in z.namelist() if not n.endswith("/")}
            if "imsmanifest.xml" not in names:
                print(f"PACKAGE {package}: no imsmanifest.xml")
                failed += 1
                continue
            for name in sorted(names):
                data = z.read(name)
                root = ET.fromstring(data)
                if root.tag == f"{{{CP_NS}}}manifest":
                    schema, what = cp, "manifest"
                elif root.tag == f"{{{ASI_NS}}}qti-assessment-item":
                    schema, what = asi, "items"
                elif root.tag == f"{{{ASI_NS}}}qti-assessment-test":
                    schema, what = asi, "tests"
                else:
                    print(f"PACKAGE {package}: {name} is not a QTI 3.0 document ({root.tag})")
                    failed += 1
                    continue
                counts[what] += 1
                errors = list(schema.iter_errors(data.decode("utf-8")))
                for e in errors[:3]:
                    print(f"SCHEMA {package}:{name}: {e.reason} at {e.path}")
                failed += bool(errors)
            # The manifest names every file of the package, and every file it names exists.
            manifest = ET.fromstring(z.read("imsmanifest.xml"))
            hrefs = {f.get("href") for f in manifest.iter(f"{{{CP_NS}}}file")}
            if hrefs != names - {"imsmanifest.xml"}:
                print(f"MANIFEST {package}: files differ: {sorted(hrefs ^ (names - {'imsmanifest.xml'}))[:5]}")
                failed += 1
        print(f"qti {os.path.basename(package)}: {counts['manifest']} manifest, "
              f"{counts['tests']} tests, {counts['items']} items validated")
    print(f"{'FAILED' if failed else 'ok'}: {failed} invalid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
