from rollout_equality.cli import main

raise SystemExit(main())
