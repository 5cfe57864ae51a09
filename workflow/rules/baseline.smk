rule random_baseline:
    """How often the condition holds on uniformly random stochastic matrices."""
    output:
        csv=BASELINE_CSV,
    log:
        log_path("random_baseline.log"),
    benchmark:
        benchmark_path("random_baseline.tsv")
    conda:
        "../../envs/workflow.yaml"
    threads: 8  # Snakemake lowers it to --cores on a smaller machine; a cluster profile sets its own
    resources:
        mem_mb=2000,
    params:
        baseline=config["baseline"],
        condition=config["condition"],
    script:
        "../scripts/random_baseline.py"
