"""Names of the columns the analysis functions return.

One place, so the UI, the CLI, the exports and the tests use the same names.
"""

#: Binary outcome column added to a results table by :func:`analysis.design.apply_design`.
DEVIATION = "deviation"

# Cell table (and subgroup tables)
N = "n"
DEVIATIONS = "deviations"
DEVIATION_RATE = "deviation_rate"

# Nesting report
DETERMINANT = "determinant"
DEPENDENT = "dependent"
N_DETERMINANT_VALUES = "n_determinant_values"
N_DEPENDENT_VALUES = "n_dependent_values"
NESTING_KIND = "kind"
