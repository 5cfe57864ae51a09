localrules:
    download_openml,


rule download_openml:
    """Fetch a table: OpenML or scikit-learn (network once, cached under resources/cache), or a CSV file."""
    output:
        "resources/tabular/{tabular}/raw.parquet",
    params:
        spec=lambda w: TABULAR[w.tabular],
    log:
        "results/logs/download_openml/{tabular}.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/download_openml.py"


rule prepare_tabular:
    """Seeded split, quantile-normalised numerical and indexed categorical features."""
    input:
        "resources/tabular/{tabular}/raw.parquet",
    output:
        data="resources/tabular/{tabular}/data.npz",
        manifest="resources/tabular/{tabular}/manifest.json",
    params:
        spec=lambda w: TABULAR[w.tabular],
        split=config["tabular"]["split"],
    log:
        "results/logs/prepare_tabular/{tabular}.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prepare_tabular.py"


rule train_ftt:
    """FT-Transformer (default configuration) on one table with one seed, early stopping on validation."""
    input:
        "resources/tabular/{tabular}/manifest.json",
    output:
        model="results/ftt/{tabular}/seed{seed}/model.pt",
        metrics="results/ftt/{tabular}/seed{seed}/metrics.json",
    params:
        training=lambda w: {**config["tabular"]["training"], **TABULAR[w.tabular].get("training", {})},
        published=lambda w: TABULAR[w.tabular].get("published"),
    log:
        "results/logs/train_ftt/{tabular}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train_ftt/{tabular}/seed{seed}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        gpu=lambda w: 0 if config["tabular"]["training"]["device"] == "cpu" else 1,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/train_ftt.py"


rule measure_ftt:
    """Attention of a trained FT-Transformer on test rows → condition and rollout records."""
    input:
        manifest="resources/tabular/{tabular}/manifest.json",
        model="results/ftt/{tabular}/seed{seed}/model.pt",
        metrics="results/ftt/{tabular}/seed{seed}/metrics.json",
    output:
        records="results/records/ftt_seed{seed}/{tabular}.parquet",
        rollout="results/records/ftt_seed{seed}/{tabular}.rollout.parquet",
    params:
        n_inputs=config["tabular"]["n_inputs"],
        device=config["tabular"]["training"]["device"],
        condition=config["condition"],
    log:
        "results/logs/measure_ftt/{tabular}/seed{seed}.log",
    threads: 2
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_ftt.py"


rule table_ftt_scores:
    """FT-Transformer test scores per data set and seed, beside the published values."""
    input:
        lambda w: ftt_metrics(w.suite),
    output:
        "results/tables/{suite}/ftt_scores.csv",
    log:
        "results/logs/table_ftt_scores/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/table_ftt_scores.py"
