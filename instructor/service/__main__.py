"""``python -m instructor.service serve|report|hello`` (see :mod:`instructor.service`)."""
import sys

from . import main

sys.exit(main())
