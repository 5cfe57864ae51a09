rule random_baseline:
    """How often the condition holds on uniformly random stochastic matrices."""
    output:
        csv=BASELINE_CSV,
    params:
        ns=config["baseline"]["ns"],
        trials=config["baseline"]["trials"],
        seed=config["baseline"]["seed"],
        chunk_size=config["baseline"]["chunk_size"],
        atol=config["condition"]["atol"],
    log:
        "results/logs/random_baseline.log",
    benchmark:
        "results/benchmarks/random_baseline.tsv"
    threads: workflow.cores
    resources:
        mem_mb=2000,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/random_baseline.py"
