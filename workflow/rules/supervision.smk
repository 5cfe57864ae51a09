# The supervision study: one small ViT drawn from each seed (its initialisation, the control), trained by each
# objective with the same budget, prepared and measured as any model (prepare_model, measure), then reported
# (rollout_equality.studies.supervision: train, report). The report is a local rule, as reporting.smk's.
localrules:
    report_supervision,


rule init_supervision:
    """One seed's untrained ViT as a checkpoint: the control, and where every objective starts."""
    output:
        **{k: v.replace("{objective}", "init") for k, v in SUPERVISION_FILES.items()},
    log:
        log_path("init_supervision/seed{seed}.log"),
    benchmark:
        benchmark_path("init_supervision/seed{seed}.tsv")
    conda:
        "../../envs/workflow.yaml"
    threads: SUPERVISION["threads"]  # torch's threads: they decide the bits
    params:
        vit=SUPERVISION["vit"],
        threads=SUPERVISION["threads"],
        code_path=SUPERVISION["code_path"],
    script:
        "../scripts/init_supervision.py"


rule train_supervision:
    """One seed's initialisation trained by one objective on the study's training digits."""
    input:
        init=SUPERVISION_FILES["weights"].replace("{objective}", "init"),
        train=DATA_MANIFEST.format(dataset=SUPERVISION["train_data"]),
        test=DATA_MANIFEST.format(dataset=SUPERVISION["test_data"]),
    output:
        **SUPERVISION_FILES,
    log:
        log_path("train_supervision/{objective}/seed{seed}.log"),
    benchmark:
        benchmark_path("train_supervision/{objective}/seed{seed}.tsv")
    wildcard_constraints:
        objective=_alternatives(SUPERVISION["objectives"]),
    conda:
        "../../envs/workflow.yaml"
    threads: SUPERVISION["threads"]  # torch's threads: they decide the bits
    resources:
        mem_mb=4000,
    params:
        vit=SUPERVISION["vit"],
        training=SUPERVISION["training"],
        threads=SUPERVISION["threads"],
        code_path=SUPERVISION["code_path"],
    script:
        "../scripts/train_supervision.py"


rule report_supervision:
    """Rates by depth per objective and the late share of the failures, each across seeds (mean and t interval), the
    paired contrast of the objectives, the accuracies (supervised test, k-NN of frozen CLS), a figure and the sentences
    of docs/results.md."""
    input:
        records=[RECORDS.format(**e) for e in SUPERVISION_EXPERIMENTS],
        heads=[HEADS.format(**e) for e in SUPERVISION_EXPERIMENTS],
        checkpoints=[SUPERVISION_FILES["info"].format(**r) for r in SUPERVISION_RUNS],
        train=DATA_MANIFEST.format(dataset=SUPERVISION["train_data"]),
        test=DATA_MANIFEST.format(dataset=SUPERVISION["test_data"]),
    output:
        **reported(
            SUPERVISION_REPORT,
            {"html": ("supervision.rst", "Supervision"), "png": ("supervision.rst", "Supervision")},
        ),
    log:
        log_path("report_supervision.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        models=[e["model"] for e in SUPERVISION_EXPERIMENTS],
        runs=SUPERVISION_RUNS,
        knn=SUPERVISION["knn"],
        late_depth=SUPERVISION["late_depth"],
        half_width=SUPERVISION["half_width"],
    script:
        "../scripts/report_supervision.py"
