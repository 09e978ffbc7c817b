"""``python -m rankengine`` runs the command line."""

import sys

from rankengine.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
