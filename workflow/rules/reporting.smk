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
        png="paper/figures/baseline_rate.png",
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
        baseline="results/baseline/random_baseline.csv",
    output:
        claims="results/tables/{suite}/claims.csv",
        rates="results/tables/{suite}/model_rates.csv",
        depth="results/tables/{suite}/depth_rates.csv",
        rollout="results/tables/{suite}/rollout_summary.csv",
        tex_claims="paper/tables/{suite}/claims.tex",
        tex_rates="paper/tables/{suite}/model_rates.tex",
        tex_rollout="paper/tables/{suite}/rollout_summary.tex",
    log:
        "results/logs/tables/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tables.py"
