# Tables, figures and the paper read small summaries: local rules, on the submitting host of a cluster run
# (a compute job's start-up and queueing cost more than their work).
localrules:
    write_baseline_latex,
    write_baseline_figure,
    write_suite_tables,
    write_suite_figures,
    write_head_tables,
    build_paper,


rule write_baseline_latex:
    """Table 1 of the paper: the random-matrix baseline (booktabs LaTeX)."""
    input:
        csv=BASELINE_CSV,
    output:
        tex=BASELINE_TEX,
    log:
        log_path("write_baseline_latex.log"),
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/write_baseline_latex.py"


rule write_baseline_figure:
    """Rate of the condition on random matrices against n, with Wilson intervals."""
    input:
        csv=BASELINE_CSV,
    output:
        pdf=BASELINE_FIGURE.format(ext="pdf"),
        png=report(BASELINE_FIGURE.format(ext="png"), caption="../report/baseline.rst", category="Baseline"),
    log:
        log_path("write_baseline_figure.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        claim=baseline_claim(config["claims"]),
    script:
        "../scripts/write_baseline_figure.py"


rule write_suite_tables:
    """Rates per model and per depth, the rollout summary and the claims table of one suite."""
    input:
        records=lambda w: suite_records(w.suite),
        rollout=lambda w: suite_records(w.suite, "rollout"),
        metrics=lambda w: ftt_metrics(w.suite),
        baseline=BASELINE_CSV,
        ablation=lambda w: [FTT_ABLATION["summary"]] if ablation_in(w.suite) else [],
    output:
        **reported(SUITE_TABLES, TABLE_CAPTIONS),
    log:
        log_path("write_suite_tables/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        claims=config["claims"],
        not_run=lambda w: claim_reasons(config, w.suite),
        ablation_claim=lambda w: ABLATION.get("claim") if ablation_in(w.suite) else None,
    script:
        "../scripts/write_suite_tables.py"


rule write_suite_figures:
    """Rate against depth, slack, rollout against its bounds, and an attention heatmap for one suite."""
    input:
        records=lambda w: suite_records(w.suite),
        rollout=lambda w: suite_records(w.suite, "rollout"),
        dumps=lambda w: suite_dumps(w.suite),
    output:
        **reported(SUITE_FIGURES, FIGURE_CAPTIONS),
    log:
        log_path("write_suite_figures/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        heatmaps=lambda w: heatmap_count(w.suite),
        kinds=model_kinds(MODELS),
        claims=config["claims"],
    script:
        "../scripts/write_suite_figures.py"


rule write_head_tables:
    """Per-head rates, where the head average and its heads disagree, the rates under each fusion, and the heads x
    layers figure of one suite (config analysis)."""
    input:
        records=lambda w: suite_records(w.suite),
        rollout=lambda w: suite_records(w.suite, "rollout"),
        heads=lambda w: suite_records(w.suite, "heads"),
        heads_rollout=lambda w: suite_records(w.suite, "heads_rollout"),
    output:
        **HEAD_TABLES,
    log:
        log_path("write_head_tables/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        kinds=model_kinds(MODELS),
    script:
        "../scripts/write_head_tables.py"


rule build_paper:
    """paper/main.tex → paper/suite-<suite>.pdf with latexmk (says how to install TeX when it is missing)."""
    input:
        main=PAPER_MAIN,
        reads=lambda w: paper_reads(w.suite),
    output:
        PAPER_PDF,
    log:
        log_path("build_paper/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/build_paper.py"
