"""Configuration: what a run is asked to do, and where its files go.

* :mod:`.schema` — ``config.schema.yaml`` as the library reads it: every key, default and allowed value;
* :mod:`.load` — the one loader: files merged, checked against the schema, its defaults filled in;
* :mod:`.checks` — what the schema cannot check: names that refer to other entries, the analysis each run resolves to,
  the tables the tabular section resolves to;
* :mod:`.settings` — the sections compute steps take whole, as typed records;
* :mod:`.paths` — every output path template and each rule's output keys, and the form of a Snakemake command the
  library shows (:func:`.paths.snakemake_command`);
* :mod:`.profiles` — what a Snakemake command line asks for, checked before any job: the site profile made from
  profiles/slurm, a profile left with a placeholder refused, the executor, a target that names nothing;
* :mod:`.supervision` — the supervision study's models and experiments, derived from its section.

The lowest stage: imports nothing else of the library.
"""
