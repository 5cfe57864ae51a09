# Downloads and data preparation need the network (hub sources) but little compute:
# they run on the submitting host, never on cluster compute nodes.
localrules:
    check_network_sources,
    report_sources,
    prepare_model,
    prepare_data,


rule check_network_sources:
    """Every network source of the config's suites: revision → commit, files chosen, sizes, gated; fails listing every problem."""
    output:
        temp(SOURCES_CHECK),
    log:
        log_path("check_sources.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        suites=list(config["suites"]),
        cache=DOWNLOAD_CACHE,
    script:
        "../scripts/check_sources.py"


# `snakemake --cores 1 check_sources`: a table of its own each time (the temporary one above is deleted once the downloads
# that wait for it are done, so that the next download checks again).
use rule check_network_sources as report_sources with:
    output:
        SOURCES_REPORT,
    log:
        log_path("check_sources-{stamp}.log"),


rule prepare_model:
    """Make a model available locally: hub snapshot, local/package directory, split-zip distributions or random build."""
    input:
        lambda w: model_source(w.model),
    output:
        MODEL_INFO,
    log:
        log_path("prepare_model/{model}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        spec=lambda w: config["models"][w.model],
    script:
        "../scripts/prepare_model.py"


rule prepare_data:
    """Draw the data set's inputs (images or text segments) and write its manifest."""
    input:
        lambda w: source_check("datasets", w.dataset),
    output:
        DATA_MANIFEST,
    log:
        log_path("prepare_data/{dataset}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        spec=lambda w: config["datasets"][w.dataset],
    script:
        "../scripts/prepare_data.py"


rule measure:
    """Attention of one model on one data set → condition and rollout records."""
    input:
        model=MODEL_INFO,
        data=DATA_MANIFEST,
    output:
        records=RECORDS,
        rollout=ROLLOUT,
        heads=HEADS,
        heads_rollout=HEADS_ROLLOUT,
        dump=DUMP,
        summary=SUMMARY,  # the records' per-layer rates, by the same process (a Python start less per experiment)
    log:
        log_path("measure/{model}/{dataset}.log"),
    benchmark:
        benchmark_path("measure/{model}/{dataset}.tsv")
    conda:
        "../../envs/workflow.yaml"
    threads: config["extraction"]["threads"]  # the forward pass's; the analysis uses the job's (set-threads may raise them)
    resources:
        mem_mb=16000,
        gpu=gpu_claim(config["extraction"]["device"]),  # from the setting: the job resolves auto on its node
    params:
        extraction=config["extraction"],
        condition=config["condition"],
        analysis=lambda w: experiment_analysis(config, w.model, w.dataset),
        inputs=lambda w: run_inputs(config, w.model, w.dataset),
    script:
        "../scripts/measure.py"
