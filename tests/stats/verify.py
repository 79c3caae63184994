#!/usr/bin/env python3
"""Recomputes quizd's analytics with numpy and scipy from the raw score matrix that the
`analytics::the_statistics_agree_with_the_data_and_an_independent_check` test dumps (read
straight from the `analytics` views), and compares them with what the API reported.

Usage: verify.py target/tmp/stats-check/analytics.json
"""
import json
import sys

import numpy as np
from scipy import stats

TOL = 1e-6


def close(name, api, expected):
    if expected is None or (isinstance(expected, float) and not np.isfinite(expected)):
        ok = api is None
    else:
        ok = api is not None and abs(api - expected) <= TOL * max(1.0, abs(expected))
    if not ok:
        print(f"MISMATCH {name}: api={api} independent={expected}")
    return ok


def main(path):
    data = json.load(open(path))
    x = np.array(data["scores"], dtype=float)  # attempts × questions, points
    maxp = np.array(data["max"], dtype=float)
    locales = np.array(data["locales"])
    report = data["report"]
    n, p = x.shape
    total = x.sum(axis=1)
    pct = 100 * total / maxp.sum()
    checks = []
    t = report["test"]
    checks.append(close("mean", t["mean"], pct.mean()))
    checks.append(close("median", t["median"], float(np.median(pct))))
    checks.append(close("sd", t["standard_deviation"], pct.std(ddof=1)))
    checks.append(close("skewness", t["skewness"], float(stats.skew(pct, bias=False))))
    checks.append(close("kurtosis", t["kurtosis"], float(stats.kurtosis(pct, bias=False))))
    alpha = p / (p - 1) * (1 - x.var(axis=0, ddof=1).sum() / total.var(ddof=1))
    checks.append(close("cronbach_alpha", t["cronbach_alpha"], 100 * alpha))
    er = np.sqrt(1 - alpha)
    checks.append(close("error_ratio", t["error_ratio"], 100 * er))
    checks.append(close("standard_error", t["standard_error"], er * pct.std(ddof=1)))
    hist = np.minimum(np.floor(pct / 10).astype(int), 9)
    counts = [int((hist == i).sum()) for i in range(10)]
    api_counts = [b["count"] for b in t["histogram"]]
    if counts != api_counts:
        print(f"MISMATCH histogram: api={api_counts} independent={counts}")
        checks.append(False)

    covs = np.array([np.cov(x[:, i], total, ddof=1)[0, 1] for i in range(p)])
    roots = np.sqrt(covs) if (covs >= 0).all() else None
    for i, q in enumerate(report["questions"]):
        xi = x[:, i]
        rest = total - xi
        key = q["key"]
        checks.append(close(f"{key} facility", q["facility"], 100 * xi.mean() / maxp[i]))
        checks.append(close(f"{key} sd", q["standard_deviation"], 100 * xi.std(ddof=1) / maxp[i]))
        checks.append(close(f"{key} discrimination", q["discrimination_index"], 100 * stats.pearsonr(xi, rest)[0]))
        cmax = np.cov(np.sort(xi), np.sort(rest), ddof=1)[0, 1]
        checks.append(close(f"{key} efficiency", q["discriminative_efficiency"], 100 * np.cov(xi, rest, ddof=1)[0, 1] / cmax))
        checks.append(close(f"{key} intended weight", q["intended_weight"], 100 * maxp[i] / maxp.sum()))
        if roots is not None:
            checks.append(close(f"{key} effective weight", q["effective_weight"], 100 * roots[i] / roots.sum()))

    # Per locale: facility, and the chi-square test of homogeneity of full marks by locale.
    names = sorted(set(locales))
    for loc in report["locales"]:
        rows = x[locales == loc["locale"]]
        for i, lq in enumerate(loc["questions"]):
            checks.append(close(f"{loc['locale']} {lq['key']} facility", lq["facility"], 100 * rows[:, i].mean() / maxp[i]))
    for i, d in enumerate(report["locale_differences"]):
        full = [(x[locales == l, i] >= maxp[i] - 1e-9) for l in names]
        table = np.array([[f.sum(), len(f) - f.sum()] for f in full])
        expected = stats.contingency.expected_freq(table)
        if (expected >= 5).all() and table[:, 0].sum() not in (0, table.sum()):
            chi2, pval, dof, _ = stats.chi2_contingency(table, correction=False)
            checks.append(close(f"{d['key']} chi2", d["chi_square"], chi2))
            checks.append(close(f"{d['key']} p", d["p_value"], pval))
            if d["flagged"] != bool(pval < 0.01):
                print(f"MISMATCH {d['key']} flagged: api={d['flagged']} p={pval}")
                checks.append(False)
        else:
            checks.append(d["p_value"] is None)

    failed = checks.count(False)
    print(f"stats: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
