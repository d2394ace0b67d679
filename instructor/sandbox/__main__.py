"""``python -m instructor.sandbox``: what protects the grading host here, measured (:func:`report`)."""
import json

from . import report

print(json.dumps(report(), indent=1))
