from privbandit.cli import main

raise SystemExit(main())
