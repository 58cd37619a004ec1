# Reference numbers for tests/analysis/test_pooling.py: the pooling model of
# analysis/pooling.py (a Gaussian multilevel model of subgroup logits with known
# sampling variances, main effect of a and the a:b interaction random, b fixed) fitted by
# metafor::rma.mv with plain REML, on tests/reference/pooling_input.csv
# (make_pooling_input.py). Stores the variances, the fixed effects and the predicted
# logit of every subgroup (fixed part + the random effects' BLUPs) with the
# prediction's standard error from metafor's ranef (the random parts only, for the
# check of the fixed-part-free pieces).
# Run from the repository root: Rscript tests/reference/pooling_metafor.R
# Written with R 4.2.2 and metafor (version stored in the JSON).
suppressPackageStartupMessages(library(metafor))
library(jsonlite)
d <- read.csv("tests/reference/pooling_input.csv", stringsAsFactors = TRUE)
fit <- rma.mv(y, vi, mods = ~ b, random = list(~ 1 | a, ~ 1 | ab), data = d,
              method = "REML", control = list(rel.tol = 1e-10, eval.max = 10000, iter.max = 10000))
re <- ranef(fit)
ua <- re[["a"]][as.character(d$a), "intrcpt"]
uab <- re[["ab"]][as.character(d$ab), "intrcpt"]
theta <- as.numeric(fitted(fit)) + ua + uab
out <- list(
  r_version = R.version.string,
  metafor_version = as.character(packageVersion("metafor")),
  sigma2 = list(a = fit$sigma2[1], ab = fit$sigma2[2]),
  beta = as.numeric(fit$beta),
  theta = theta,
  ll_reml = as.numeric(logLik(fit))
)
write_json(out, "tests/reference/pooling_metafor.json", digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
