# Reproduces "An equality condition for the Dobrushin bound on attention rollout and
# how often it holds in trained transformers".
#
#   snakemake --cores 2 offline   # everything that runs without network
#   snakemake --cores N           # the paper (default target `all`)
#
# Rules live in workflow/rules/*.smk; each calls one function of src/rollout_equality.

configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/baseline.smk"
include: "workflow/rules/reporting.smk"


rule all:
    """The paper: for now the random-matrix baseline (models join with later steps)."""
    input:
        PAPER_TARGETS,
    default_target: True


rule offline:
    """Every output that can be produced without network access."""
    input:
        OFFLINE_TARGETS,
