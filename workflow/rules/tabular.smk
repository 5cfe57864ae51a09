# Fetching and preparing a table (seconds of pandas and scikit-learn), and the tables of scores and of the
# ablation, run on the submitting host; training and measuring FT-Transformer are the cluster's jobs.
localrules:
    fetch_table,
    prepare_tabular,
    write_ftt_scores,
    write_ftt_ablation,
    write_ftt_ablation_section,


rule fetch_table:
    """Fetch a table: OpenML or scikit-learn (network once, cached under resources/cache), or a CSV file."""
    input:
        lambda w: source_check("tables", w.tabular),
    output:
        TABLE_RAW,
    log:
        log_path("fetch_table/{tabular}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        spec=lambda w: {"source": TABLES[w.tabular]["source"]},
        cache=DOWNLOAD_CACHE,
    script:
        "../scripts/fetch_table.py"


rule prepare_tabular:
    """Seeded split, quantile-normalised numerical and indexed categorical features (the table's recipe)."""
    input:
        TABLE_RAW,
    output:
        data=TABLE_DATA,
        manifest=TABLE_MANIFEST,
    log:
        log_path("prepare_tabular/{tabular}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        spec=lambda w: table_preparation(w.tabular),
    script:
        "../scripts/prepare_tabular.py"


rule train_ftt:
    """FT-Transformer (default configuration, the table's head) on one table with one seed, early stopping on validation."""
    input:
        data=TABLE_DATA,
        manifest=TABLE_MANIFEST,
    output:
        model=FTT_MODEL,
        metrics=FTT_METRICS,
    log:
        log_path("train_ftt/{tabular}/seed{seed}.log"),
    benchmark:
        benchmark_path("train_ftt/{tabular}/seed{seed}.tsv")
    conda:
        "../../envs/workflow.yaml"
    threads: lambda w: TABLES[w.tabular]["training"]["threads"]  # the scheduler's share; torch uses exactly these
    resources:
        mem_mb=8000,
        gpu=lambda w: gpu_claim(TABLES[w.tabular]["training"]["device"]),
    params:
        training=lambda w: TABLES[w.tabular]["training"],
        binary_head=lambda w: TABLES[w.tabular]["recipe"]["binary_head"],
        published=lambda w: TABLES[w.tabular]["published"],
    script:
        "../scripts/train_ftt.py"


rule measure_ftt:
    """Attention of a trained FT-Transformer on test rows → condition and rollout records."""
    input:
        data=TABLE_DATA,
        manifest=TABLE_MANIFEST,
        model=FTT_MODEL,
        metrics=FTT_METRICS,
    output:
        records=FTT_RECORDS,
        rollout=FTT_ROLLOUT,
        heads=FTT_HEADS,
        heads_rollout=FTT_HEADS_ROLLOUT,
        summary=FTT_SUMMARY,  # the records' per-layer rates, as rule measure writes them
    log:
        log_path("measure_ftt/{tabular}/seed{seed}.log"),
    conda:
        "../../envs/workflow.yaml"
    threads: lambda w: TABLES[w.tabular]["training"]["threads"]
    resources:
        gpu=lambda w: gpu_claim(TABLES[w.tabular]["training"]["device"]),
    params:
        n_inputs=config["tabular"]["n_inputs"],
        training=lambda w: TABLES[w.tabular]["training"],
        condition=config["condition"],
        analysis=lambda w: run_analysis(config, w.tabular),  # an ablation table (<table>@<setting>): analysis's own
    script:
        "../scripts/measure_ftt.py"


rule write_ftt_scores:
    """FT-Transformer test scores per data set and seed, beside the published values."""
    input:
        lambda w: ftt_metrics(w.suite),
    output:
        FTT_SCORES,
    log:
        log_path("write_ftt_scores/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/write_ftt_scores.py"


rule write_ftt_ablation:
    """The recipe ablation: test score and condition rates per setting (seeds pooled), per layer, and a figure."""
    input:
        records=[FTT_RECORDS.format(tabular=t, seed=s) for t, s in ablation_runs()],
        metrics=[FTT_METRICS.format(tabular=t, seed=s) for t, s in ablation_runs()],
    output:
        **{k: v for k, v in FTT_ABLATION.items() if k not in ("html", "png")},
        html=report(FTT_ABLATION["html"], caption="../report/ftt_ablation.rst", category="FT-Transformer"),
        png=report(FTT_ABLATION["png"], caption="../report/ftt_ablation.rst", category="FT-Transformer"),
    log:
        log_path("write_ftt_ablation.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        settings=lambda w: {t: e for t, e in TABLES.items() if "ablation" in e},
        claim=lambda w: config["claims"].get(ABLATION.get("claim")) if ABLATION else None,
    script:
        "../scripts/write_ftt_ablation.py"


rule write_ftt_ablation_section:
    """The paper's ablation section for one suite: the ablation's table and figure, or a note that it was not run."""
    input:
        lambda w: [FTT_ABLATION["tex"], FTT_ABLATION["pdf"], FTT_ABLATION["summary"]] if ablation_in(w.suite) else [],
    output:
        FTT_ABLATION_SECTION,
    log:
        log_path("write_ftt_ablation_section/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        table=ABLATION["table"] if ABLATION else None,
    script:
        "../scripts/write_ftt_ablation_section.py"
