"""`python -m fracsgd`: the `fracsgd` command (see the command-line chapter, nbs/99_cli.ipynb)."""
import sys

from fracsgd.cli import main

if __name__ == '__main__':
    sys.exit(main())
