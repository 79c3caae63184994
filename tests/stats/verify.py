#!/usr/bin/env python3
"""Recomputes quizd's analytics with numpy and scipy from the raw score matrix that the
`analytics::the_statistics_agree_with_the_data_and_an_independent_check` test dumps (read
straight from the `analytics` views), and compares them with what the API reported.

Also checks the Mantel-Haenszel DIF of every question and pair of locales, there and in
`dif.json` beside it (written by
`analytics::mantel_haenszel_flags_the_planted_translation_and_not_a_stronger_group`: Bengali
learners 0.8 logits stronger, sync-collective 1.5 logits harder in Indonesian), where the
planted question must be class C against Indonesian and every other pair class A.

And, in `banks.json` beside it (written by `banks::analytics_count_each_question_over_the_
attempts_that_saw_it`), a quiz with a bank, where attempts serve different questions: each
question's statistics over the attempts that served it, and the test statistics as Moodle's
quiz_statistics defines them for random questions (see `Subsets` in src/analytics/stats.rs).

Usage: verify.py target/tmp/stats-check/analytics.json
"""
import os
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

    checks.extend(check_dif(x, maxp, locales, report))

    failed = checks.count(False)
    print(f"stats: {len(checks) - failed} passed, {failed} failed")
    return failed


def mantel_haenszel(correct, focal, stratum):
    """MH statistics from boolean arrays, as 2x2xK tables built with numpy."""
    ks = np.unique(stratum)
    t = np.array([[[np.sum((stratum == k) & (focal == f) & (correct == c)) for c in (True, False)]
                   for f in (False, True)] for k in ks], dtype=float)  # K x group x (right, wrong)
    both = (t[:, 0, :].sum(axis=1) > 0) & (t[:, 1, :].sum(axis=1) > 0)
    t = t[both]
    a, b, c, d = t[:, 0, 0], t[:, 0, 1], t[:, 1, 0], t[:, 1, 1]
    n = t.sum(axis=(1, 2))
    nref, nfoc = a + b, c + d
    if nref.sum() < 30 or nfoc.sum() < 30:
        return None
    r, s_ = a * d / n, b * c / n
    if r.sum() <= 0 or s_.sum() <= 0:
        return None
    alpha = r.sum() / s_.sum()
    ea = nref * (a + c) / n
    va = nref * nfoc * (a + c) * (b + d) / (n ** 2 * (n - 1))
    chi2 = max(abs(a.sum() - ea.sum()) - 0.5, 0) ** 2 / va.sum()
    p = stats.chi2.sf(chi2, 1)
    # Robins, Breslow & Greenland (1986) variance of ln(alpha).
    pp, qq = (a + d) / n, (b + c) / n
    var = ((pp * r).sum() / (2 * r.sum() ** 2) + (pp * s_ + qq * r).sum() / (2 * r.sum() * s_.sum())
           + (qq * s_).sum() / (2 * s_.sum() ** 2))
    dd = -2.35 * np.log(alpha)
    se = 2.35 * np.sqrt(var)
    z = stats.norm.ppf(0.95)
    if abs(dd) < 1 or p >= 0.05:
        cls = "A"
    elif abs(dd) >= 1.5 and (abs(dd) - 1) / se > z:
        cls = "C"
    else:
        cls = "B"
    return dict(odds_ratio=alpha, chi_square=chi2, p_value=p, d_dif=dd, d_dif_se=se, ets_class=cls,
                strata=int(both.sum()), reference_attempts=int(nref.sum()), focal_attempts=int(nfoc.sum()))


def check_dif(x, maxp, locales, report):
    checks = []
    total = x.sum(axis=1)
    for i, d in enumerate(report["locale_differences"]):
        correct = x[:, i] >= maxp[i] - 1e-9
        stratum = np.round(total - x[:, i]).astype(int)
        for pair in d["mantel_haenszel"]:
            rows = (locales == pair["reference"]) | (locales == pair["focal"])
            mh = mantel_haenszel(correct[rows], locales[rows] == pair["focal"], stratum[rows])
            name = f"{d['key']} {pair['reference']}-{pair['focal']}"
            if mh is None:
                checks.append(pair["ets_class"] is None)
                continue
            for field in ("odds_ratio", "chi_square", "p_value", "d_dif", "d_dif_se"):
                checks.append(close(f"{name} {field}", pair[field], mh[field]))
            for field in ("ets_class", "strata", "reference_attempts", "focal_attempts"):
                if pair[field] != mh[field]:
                    print(f"MISMATCH {name} {field}: api={pair[field]} independent={mh[field]}")
                    checks.append(False)
    return checks


def check_planted(path):
    """The DIF data set: the planted question C against Indonesian, everything else A."""
    data = json.load(open(path))
    x = np.array(data["scores"], dtype=float)
    maxp = np.array(data["max"], dtype=float)
    locales = np.array(data["locales"])
    report = data["report"]
    checks = check_dif(x, maxp, locales, report)
    means = {l: x[locales == l].sum(axis=1).mean() for l in sorted(set(locales))}
    print("dif: mean total by locale", {l: round(m, 3) for l, m in means.items()})
    for i, d in enumerate(report["locale_differences"]):
        for pair in d["mantel_haenszel"]:
            rows = (locales == pair["reference"]) | (locales == pair["focal"])
            correct = x[rows, i] >= maxp[i] - 1e-9
            stratum = np.round(x[rows].sum(axis=1) - x[rows, i]).astype(int)
            mh = mantel_haenszel(correct, locales[rows] == pair["focal"], stratum)
            planted = d["key"] == "sync-collective" and "id" in (pair["reference"], pair["focal"])
            want = "C" if planted else "A"
            ok = mh is not None and mh["ets_class"] == want
            if not ok:
                print(f"PLANTED {d['key']} {pair['reference']}-{pair['focal']}: want {want}, independent {mh}")
            checks.append(ok)
    failed = checks.count(False)
    print(f"dif: {len(checks) - failed} passed, {failed} failed")
    return failed


def check_banks(path):
    """A quiz with a bank: per question over the attempts that served it; test statistics on
    each attempt's own maximum; CIC over slots, a slot drawing k counting k items with the
    variance of one drawn question's mark pooled over the (attempt, question) pairs."""
    data = json.load(open(path))
    attempts, maxp, report = data["attempts"], data["max"], data["report"]
    checks = []
    total = np.array([sum(a["points"].values()) for a in attempts])
    pct = 100 * total / np.array([a["max_score"] for a in attempts])
    t = report["test"]
    checks.append(close("banks mean", t["mean"], pct.mean()))
    checks.append(close("banks median", t["median"], float(np.median(pct))))
    checks.append(close("banks sd", t["standard_deviation"], pct.std(ddof=1)))
    p = sum(s["draw"] for s in data["slots"])
    item_var = sum(s["draw"] * np.var([a["points"][q] for a in attempts for q in s["questions"]
                                       if q in a["points"]], ddof=1) for s in data["slots"])
    vt = total.var(ddof=1)
    alpha = p / (p - 1) * (1 - item_var / vt) if vt > 1e-9 else None
    checks.append(close("banks cronbach_alpha", t["cronbach_alpha"], None if alpha is None else 100 * alpha))
    for q in report["questions"]:
        key = q["key"]
        saw = [a for a in attempts if key in a["points"]]
        if len(saw) != q["attempts"]:
            print(f"MISMATCH banks {key} attempts: api={q['attempts']} independent={len(saw)}")
            checks.append(False)
        if not saw:
            checks.append(q["facility"] is None)
            continue
        xi = np.array([a["points"][key] for a in saw])
        rest = np.array([sum(a["points"].values()) for a in saw]) - xi
        checks.append(close(f"banks {key} facility", q["facility"], 100 * xi.mean() / maxp[key]))
        if len(saw) > 1:
            checks.append(close(f"banks {key} sd", q["standard_deviation"], 100 * xi.std(ddof=1) / maxp[key]))
        if len(saw) > 1 and xi.std() > 1e-9 and rest.std() > 1e-9:
            checks.append(close(f"banks {key} discrimination", q["discrimination_index"],
                                100 * stats.pearsonr(xi, rest)[0]))
        checks.append(close(f"banks {key} intended weight", q["intended_weight"], 100 * maxp[key] / data["nominal_max"]))
    # Per slot: the mark as a fraction of its question's points over every (attempt, question)
    # pair the slot served, against the rest of that attempt's total.
    for got, slot in zip(report["slots"], data["slots"]):
        frac, rest = [], []
        for a in attempts:
            total_a = sum(a["points"].values())
            for q in slot["questions"]:
                if q in a["points"]:
                    frac.append(a["points"][q] / maxp[q])
                    rest.append(total_a - a["points"][q])
        frac, rest = np.array(frac), np.array(rest)
        name = f"banks slot {got['position']}"
        checks.append(got["attempts"] == len(frac) and got["questions"] == slot["questions"])
        checks.append(close(f"{name} facility", got["facility"], 100 * frac.mean()))
        checks.append(close(f"{name} sd", got["standard_deviation"], 100 * frac.std(ddof=1)))
        if frac.std() > 1e-9 and rest.std() > 1e-9:
            checks.append(close(f"{name} discrimination", got["discrimination_index"],
                                100 * stats.pearsonr(frac, rest)[0]))
    if len(report["slots"]) != len(data["slots"]):
        print(f"MISMATCH banks slots: api={len(report['slots'])} expected={len(data['slots'])}")
        checks.append(False)
    failed = checks.count(False)
    print(f"banks: {len(checks) - failed} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    failed = main(sys.argv[1])
    dif = os.path.join(os.path.dirname(sys.argv[1]), "dif.json")
    if not os.path.exists(dif):
        print(f"MISSING {dif}: run the analytics tests first")
        failed += 1
    else:
        failed += check_planted(dif)
    banks = os.path.join(os.path.dirname(sys.argv[1]), "banks.json")
    if not os.path.exists(banks):
        # Not a failure: `cargo test --test api analytics::` alone does not write it (.ci/run
        # runs every test first, so there it is always checked).
        print(f"SKIPPED banks: no {banks} (cargo test --test api banks:: writes it)")
    else:
        failed += check_banks(banks)
    sys.exit(1 if failed else 0)
