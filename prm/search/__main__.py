"""`python -m prm.search ...`: the driver lives in `prm.run_search` (this package is the library it drives)."""

from prm.run_search import main

main()
