rule table_baseline:
    """Table 1 of the paper: the random-matrix baseline (booktabs LaTeX)."""
    input:
        csv="results/baseline/random_baseline.csv",
    output:
        tex="paper/tables/baseline.tex",
    log:
        "results/logs/table_baseline.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/table_baseline.py"


rule figure_baseline:
    """Rate of the condition on random matrices against n, with Wilson intervals."""
    input:
        csv="results/baseline/random_baseline.csv",
    output:
        pdf="paper/figures/baseline_rate.pdf",
        png=report("paper/figures/baseline_rate.png", caption="../report/baseline.rst", category="Baseline"),
    log:
        "results/logs/figure_baseline.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_baseline.py"


rule tables:
    """Rates per model and per depth, the rollout summary and the claims table of one suite."""
    input:
        records=lambda w: suite_records(w.suite),
        metrics=lambda w: ftt_metrics(w.suite),
        baseline="results/baseline/random_baseline.csv",
    output:
        claims=report("results/tables/{suite}/claims.csv", caption="../report/tables.rst", category="Tables"),
        rates=report("results/tables/{suite}/model_rates.csv", caption="../report/tables.rst", category="Tables"),
        depth=report("results/tables/{suite}/depth_rates.csv", caption="../report/tables.rst", category="Tables"),
        rollout=report("results/tables/{suite}/rollout_summary.csv", caption="../report/tables.rst", category="Tables"),
        tex_claims="paper/tables/{suite}/claims.tex",
        tex_rates="paper/tables/{suite}/model_rates.tex",
        tex_rollout="paper/tables/{suite}/rollout_summary.tex",
        tex_macros="paper/tables/{suite}/macros.tex",
        tex_depth="paper/tables/{suite}/depth_rates.tex",
        ftt=report("results/tables/{suite}/ftt.csv", caption="../report/tables.rst", category="Tables"),
        tex_ftt="paper/tables/{suite}/ftt.tex",
    log:
        "results/logs/tables/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tables.py"


rule figures:
    """Rate against depth, slack, rollout against its bounds, and an attention heatmap for one suite."""
    input:
        records=lambda w: suite_records(w.suite),
        dumps=lambda w: [f"results/attention/{e['model']}/{e['dataset']}.npz" for e in config["suites"].get(w.suite, [])],
    output:
        depth_pdf="paper/figures/{suite}/depth.pdf",
        depth_png=report("paper/figures/{suite}/depth.png", caption="../report/depth.rst", category="Figures"),
        slack_pdf="paper/figures/{suite}/slack.pdf",
        slack_png=report("paper/figures/{suite}/slack.png", caption="../report/slack.rst", category="Figures"),
        rollout_pdf="paper/figures/{suite}/rollout.pdf",
        rollout_png=report("paper/figures/{suite}/rollout.png", caption="../report/rollout.rst", category="Figures"),
        heatmap_pdf="paper/figures/{suite}/heatmap.pdf",
        heatmap_png=report("paper/figures/{suite}/heatmap.png", caption="../report/heatmap.rst", category="Figures"),
    log:
        "results/logs/figures/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figures.py"


rule build_paper:
    """paper/main.tex → paper/suite-<suite>.pdf with latexmk (says how to install TeX when it is missing)."""
    input:
        main="paper/main.tex",
        reads=lambda w: paper_reads(w.suite),
    output:
        "paper/suite-{suite}.pdf",
    log:
        "results/logs/build_paper/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/build_paper.py"
