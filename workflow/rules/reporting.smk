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
