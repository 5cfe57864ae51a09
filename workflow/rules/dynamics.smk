# The dynamics study: simulations of self-attention dynamics on the sphere, and ALBERT's shared
# layer applied beyond its trained depth (rollout_equality.studies.dynamics: consensus, albert, report).
# The reports (tables and figures) are local rules, as reporting.smk's.
localrules:
    report_simulations,
    report_albert,


rule simulate_dynamics:
    """The four simulation experiments: trajectories, stability of the equilibria, the bipartite basin."""
    output:
        **SIMULATIONS,
    log:
        log_path("simulate_dynamics.log"),
    benchmark:
        benchmark_path("simulate_dynamics.tsv")
    conda:
        "../../envs/workflow.yaml"
    params:
        specs=config["dynamics"]["simulations"],
        seed=config["dynamics"]["seed"],
    script:
        "../scripts/simulate_dynamics.py"


rule report_simulations:
    """Summary and LaTeX tables of the simulations, one figure per experiment."""
    input:
        **SIMULATIONS,
    output:
        **reported(SIMULATION_REPORT, {"summary_html": ("dynamics.rst", "Dynamics")}),
        **reported(
            SIMULATION_FIGURES, {k: ("dynamics.rst", "Dynamics") for k in SIMULATION_FIGURES if k.endswith("_png")}
        ),
    log:
        log_path("report_simulations.log"),
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/report_simulations.py"


rule unroll_albert:
    """ALBERT's shared layer applied `dynamics.albert.steps` times to every input of a text data set."""
    input:
        model=MODEL_INFO,
        data=DATA_MANIFEST,
    output:
        records=ALBERT_RECORDS,
        info=ALBERT_INFO,
    log:
        log_path("unroll_albert/{model}/{dataset}.log"),
    benchmark:
        benchmark_path("unroll_albert/{model}/{dataset}.tsv")
    conda:
        "../../envs/workflow.yaml"
    threads: config["extraction"]["threads"]  # torch's threads for the forward passes: they decide the bits
    resources:
        mem_mb=8000,
    params:
        albert=config["dynamics"]["albert"],
        condition=config["condition"],
        threads=config["extraction"]["threads"],
        code_path=config["extraction"]["code_path"],
    script:
        "../scripts/unroll_albert.py"


rule report_albert:
    """Per-step table and figure of one suite's ALBERT run."""
    input:
        records=lambda w: albert_run(w.suite, ALBERT_RECORDS),
        info=lambda w: albert_run(w.suite, ALBERT_INFO),
    output:
        **reported(ALBERT_REPORT, {"steps_html": ("albert.rst", "Dynamics"), "png": ("albert.rst", "Dynamics")}),
    log:
        log_path("report_albert/{suite}.log"),
    conda:
        "../../envs/workflow.yaml"
    params:
        table_steps=config["dynamics"]["albert"]["table_steps"],
    script:
        "../scripts/report_albert.py"
