# Downloads and data preparation need the network (hub sources) but little compute:
# they run on the submitting host, never on cluster compute nodes.
localrules:
    download_model,
    prepare_data,


rule download_model:
    """Make a model available locally: hub snapshot, local/package directory, or random build."""
    output:
        "resources/models/{model}/model.json",
    params:
        spec=lambda w: config["models"][w.model],
    log:
        "results/logs/download_model/{model}.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/download_model.py"


rule prepare_data:
    """Draw the data set's inputs (images or text segments) and write its manifest."""
    output:
        "resources/data/{dataset}/manifest.json",
    params:
        spec=lambda w: config["datasets"][w.dataset],
    log:
        "results/logs/prepare_data/{dataset}.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prepare_data.py"


rule measure:
    """Attention of one model on one data set → condition and rollout records."""
    input:
        model="resources/models/{model}/model.json",
        data="resources/data/{dataset}/manifest.json",
    output:
        records="results/records/{model}/{dataset}.parquet",
        rollout="results/records/{model}/{dataset}.rollout.parquet",
        dump="results/attention/{model}/{dataset}.npz",
    params:
        extraction=config["extraction"],
        condition=config["condition"],
    log:
        "results/logs/measure/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/measure/{model}/{dataset}.tsv"
    threads: 2
    resources:
        mem_mb=16000,
        gpu=lambda w: 1 if config["extraction"]["device"] != "cpu" else 0,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure.py"


rule summarise_records:
    """Per-layer rates of one model on one data set (content and all tokens)."""
    wildcard_constraints:  # also the FT-Transformer records (results/records/ftt_seed<N>/<table>)
        model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
        dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    input:
        "results/records/{model}/{dataset}.parquet",
    output:
        "results/summaries/{model}/{dataset}.csv",
    log:
        "results/logs/summarise_records/{model}/{dataset}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/summarise_records.py"
