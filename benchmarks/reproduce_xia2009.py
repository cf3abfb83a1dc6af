"""Xia et al. (2009), table 1: ListMLE against top-1, top-3 and top-10 ListMLE on OHSUMED.

The paper trains linear neural networks by stochastic gradient descent on LETOR OHSUMED
(five folds) and reports NDCG and precision at 1, 3 and 10; on OHSUMED "all the loss
functions achieve comparable performances" (the gains of top-k ListMLE are on TD2003 and
TD2004, which are not available here). gbrank trains LightGBM trees with ``gbrank.listmle()``
and ``gbrank.listmle_topk(k)`` (eq. 10), same parameters, early stopping on the validation
queries, LETOR's evaluation conventions.

Run from the repository root::

    python benchmarks/reproduce_xia2009.py [--markdown docs/benchmarks/xia2009.md]
"""

from __future__ import annotations

from _papers import (
    document, emit, fmt, fold_means, markdown_table, ohsumed_setup, paired, pvalue, run, save_report,
    settings_lines,
)


FIGURES = ["ndcg@1", "ndcg@3", "ndcg@10", "p@1", "p@3", "p@10"]
HEADERS = ["N@1", "N@3", "N@10", "P@1", "P@3", "P@10"]
# Table 1 of the paper (OHSUMED).
PAPER = {
    "ListMLE": [0.548, 0.473, 0.446, 0.642, 0.582, 0.495],
    "Top-1 ListMLE": [0.529, 0.482, 0.447, 0.652, 0.595, 0.499],
    "Top-3 ListMLE": [0.535, 0.484, 0.445, 0.671, 0.608, 0.504],
    "Top-10 ListMLE": [0.558, 0.473, 0.444, 0.672, 0.601, 0.509],
}
METHODS = {
    "ListMLE": "lgb:listmle",
    "Top-1 ListMLE": "lgb:listmle_topk(k=1)",
    "Top-3 ListMLE": "lgb:listmle_topk(k=3)",
    "Top-10 ListMLE": "lgb:listmle_topk(k=10)",
}


def main(argv=None) -> int:
    args, data, config = ohsumed_setup(__doc__, argv)
    methods = list(METHODS.values())
    results, seconds = run(data, methods, folds=args.folds, config=config)
    report = save_report(results, args.out, "xia2009")
    means = fold_means(results)
    names = {label: results.methods[i]["name"] for i, label in enumerate(METHODS)}

    rows = []
    for label in METHODS:
        m = means.loc[names[label]]
        rows.append([f"{label} (`{names[label]}`)", "gbrank"] + [fmt(m[f], digits=3) for f in FIGURES]
                    + [f"{m['best_iteration']:.0f}"])
        rows.append(["", "paper"] + [fmt(v, digits=3) for v in PAPER[label]] + [""])
    table = markdown_table(["method", "source", *HEADERS, "best iter"], rows)

    direction_rows, agree, total, significant = [], 0, 0, []
    base = names["ListMLE"]
    for label in list(METHODS)[1:]:
        cells = [f"{label} − ListMLE"]
        for j, figure in enumerate(FIGURES):
            theirs = PAPER[label][j] - PAPER["ListMLE"][j]
            ours = means.loc[names[label], figure] - means.loc[base, figure]
            _, p_t, _, n_queries = paired(results, names[label], base, figure)
            if p_t < 0.05:
                significant.append(f"{label} {HEADERS[j]} ({ours:+.3f}, p = {p_t:.3f})")
            cell = f"{theirs:+.3f} / {ours:+.3f} (p {pvalue(p_t)})"
            if abs(theirs) < 5e-4:
                # the paper's two figures are equal to its 3 decimals: no direction to compare
                cells.append(cell + " =")
                continue
            same = (ours > 0) == (theirs > 0)
            agree += same
            total += 1
            cells.append(cell + ("" if same else " ✗"))
        direction_rows.append(cells)
    directions = markdown_table(["difference", *HEADERS], direction_rows)

    objectives = [
        "- Objectives: `listmle()` and `listmle_topk(k)` (xia2009 eq. 10: the Plackett–Luce "
        "likelihood of the top k positions), ties among equal labels broken at random per "
        "iteration (the paper samples one perfect permutation per query), hence the seeds.",
    ]
    text = document(
        "Xia et al. (2009), table 1: top-k ListMLE on OHSUMED",
        (
            "The paper fits linear neural networks by stochastic gradient descent; gbrank fits "
            "LightGBM trees to the same losses. Our numbers are means over "
            f"{args.folds} LETOR folds of the per-query figures on each test fold."
        ),
        table,
        "Difference to ListMLE, `paper / gbrank (paired t-test p over the "
        f"{n_queries} test queries)`; ✗ marks a cell where gbrank's sign differs from the paper's, = "
        "one where the paper's two figures are equal:",
        "",
        directions,
        "",
        f"- Signs agree with the paper in {agree} of the {total} cells where the paper's figures differ. The paper's own differences on "
        "OHSUMED are small (its text: \"all the loss functions achieve comparable performances\"), "
        "so the signs of both are mostly noise.",
        "- Differences to ListMLE significant at 5% here: "
        + ("; ".join(significant) if significant else "none") + ".",
        settings=settings_lines(config, args.folds, seconds, objectives, report=report),
    )
    emit(text, args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
