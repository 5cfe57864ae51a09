"""The companion study: depth read as time (mirrors ``workflow/rules/dynamics.smk``).

* :mod:`.sphere` — discrete-time self-attention dynamics of tokens on the unit sphere: the
  simulator, fixed points, their linear stability, the per-step table;
* :mod:`.consensus` — the four simulation experiments of ``dynamics.simulations`` (rule
  ``simulate_dynamics``);
* :mod:`.albert` — ALBERT's shared layer applied beyond its trained depth (rule ``unroll_albert``);
* :mod:`.report` — their files, tables and figures (rules ``simulate_dynamics``,
  ``report_simulations``, ``report_albert``).

No module of the attention-rollout study imports this package.
"""
