import sys

from plan_lsp.cli import main

sys.exit(main())
