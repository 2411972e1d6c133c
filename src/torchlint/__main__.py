from torchlint.cli import main

raise SystemExit(main())
