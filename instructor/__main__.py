import sys

from .classroom.cli import main

sys.exit(main())
