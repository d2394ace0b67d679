"""Grading: nbgrader plumbing (:mod:`.course`, :mod:`.cli`), the sandbox (:mod:`.sandbox`), the
confirmation run outside the student's kernel (:mod:`.confirm`), sample submissions (:mod:`.samples`)
and the cell constructors used to write ``source/`` notebooks (:mod:`.authoring`)."""
