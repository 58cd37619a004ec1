# A second, independent reference for tests/analysis/test_pooling.py: the binomial
# multilevel model (lme4::glmer, Laplace) with the same terms as the pooling model of
# analysis/pooling.py (a random, b fixed, a:b random) on the counts of
# tests/reference/pooling_input.csv (make_pooling_input.py). The pooling model is the
# Gaussian approximation of this one on the logit scale, so the test checks agreement
# of the pooled rates within a stated tolerance, not equality.
# Run from the repository root: Rscript tests/reference/pooling_lme4.R
# Written with R 4.2.2 and lme4 1.1-31 (versions stored in the JSON).
suppressPackageStartupMessages(library(lme4))
library(jsonlite)
d <- read.csv("tests/reference/pooling_input.csv", stringsAsFactors = TRUE)
fit <- glmer(cbind(deviations, n - deviations) ~ b + (1 | a) + (1 | ab), data = d,
             family = binomial, control = glmerControl(optimizer = "bobyqa"))
vc <- as.data.frame(VarCorr(fit))
out <- list(
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  variance = setNames(as.list(vc$vcov), vc$grp),
  rate = as.numeric(fitted(fit))
)
write_json(out, "tests/reference/pooling_lme4.json", digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
