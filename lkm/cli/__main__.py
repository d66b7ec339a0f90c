"""`python -m lkm.cli`."""

from lkm.cli import main

main()
