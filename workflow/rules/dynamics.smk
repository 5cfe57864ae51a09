# The dynamics study: simulations of self-attention dynamics on the sphere, and ALBERT's shared
# layer applied beyond its trained depth (rollout_equality.consensus, .albert, .dynamics_report).

SIMULATION_FIGURES = ["consensus", "bipartite", "multihead", "asymmetric", "basin"]


rule simulate_dynamics:
    """The four simulation experiments: trajectories, stability of the equilibria, the bipartite basin."""
    output:
        expand("results/dynamics/simulations/{file}", file=["trajectory.csv", "stability.csv", "basin.csv",
                                                            "beta_sweep.csv", "info.json", "tokens.npz"]),
    params:
        specs=config["dynamics"]["simulations"],
        seed=config["dynamics"]["seed"],
    log:
        "results/logs/simulate_dynamics.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/simulate_dynamics.py"


rule report_simulations:
    """Summary and LaTeX tables of the simulations, one figure per experiment."""
    input:
        rules.simulate_dynamics.output,
    output:
        summary=report("results/tables/dynamics/simulations.csv", caption="../report/dynamics.rst", category="Dynamics"),
        stability="paper/tables/dynamics/stability.tex",
        basin="paper/tables/dynamics/basin.tex",
        sweep="paper/tables/dynamics/beta_sweep.tex",
        figures=[
            report(f, caption="../report/dynamics.rst", category="Dynamics") if f.endswith(".png") else f
            for f in expand("paper/figures/dynamics/{name}.{ext}", name=SIMULATION_FIGURES, ext=["pdf", "png"])
        ],
    log:
        "results/logs/report_simulations.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/report_simulations.py"


rule unroll_albert:
    """ALBERT's shared layer applied `dynamics.albert.steps` times to every input of a text data set."""
    input:
        model="resources/models/{model}/model.json",
        data="resources/data/{dataset}/manifest.json",
    output:
        records="results/dynamics/albert/{model}/{dataset}.parquet",
        info="results/dynamics/albert/{model}/{dataset}.json",
    params:
        albert=config["dynamics"]["albert"],
        condition=config["condition"],
    log:
        "results/logs/unroll_albert/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/unroll_albert/{model}/{dataset}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/unroll_albert.py"


rule report_albert:
    """Per-step table and figure of one suite's ALBERT run."""
    input:
        records=lambda w: albert_output(w.suite, "parquet"),
        info=lambda w: albert_output(w.suite, "json"),
    output:
        steps=report("results/tables/dynamics/{suite}/albert_steps.csv", caption="../report/albert.rst", category="Dynamics"),
        tex="paper/tables/dynamics/{suite}/albert.tex",
        pdf="paper/figures/dynamics/{suite}/albert.pdf",
        png=report("paper/figures/dynamics/{suite}/albert.png", caption="../report/albert.rst", category="Dynamics"),
    log:
        "results/logs/report_albert/{suite}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/report_albert.py"
