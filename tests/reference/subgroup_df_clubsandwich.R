# Reference numbers for tests/analysis/test_subgroup_df.py: clubSandwich's CR2 standard
# error and Satterthwaite (Bell-McCaffrey) degrees of freedom of each subgroup's log
# disparity, the coefficient of the subgroup's indicator in the logistic regression
# deviation ~ 1 + [row in subgroup], clustered by the cluster column.
#
# As in clubsandwich_reference.R, the logistic fit is taken through its IRLS working
# regression (lm of sqrt(w) z on sqrt(w) X at the converged glm: the same estimate and
# the Bell-McCaffrey CR2 of the whitened model, which is the CR2 the workbench computes,
# docs/uncertainty.md).
#
# Rows that share cluster, indicator and outcome are identical in the working regression
# (same X, same residual): k of them span one direction, on which they act as a single
# row sqrt(k) x with residual sqrt(k) e (X'X, X'e, the CR2 adjustment and the
# Satterthwaite working model all agree on that subspace). So each such set is one row of
# a binomial glm with prior weight k, whose working weights k mu (1 - mu) give exactly
# that scaling; the lm of the working regression is unweighted. On the bundled BBQ sample
# this takes seconds instead of ~5 minutes per subgroup. For the simulated case the rows
# are also fitted one by one ("rows_" columns) and clubSandwich's own vcovCR.glm is stored
# ("glm_" columns; a different square root of the CR2 adjustment when the working weights
# vary inside a cluster): the test checks rows_ == collapsed. (An lm with weights = k is
# NOT the same: clubSandwich then takes the weights as the working model's precision.)
#
# Input:  tests/reference/subgroup_df_cells.csv (make_subgroup_df_inputs.py)
# Output: tests/reference/subgroup_df_clubsandwich.csv: case, value, n_clusters, estimate,
#         std_err, df, p_value, rows_std_err, rows_df, glm_std_err, glm_df, r_version,
#         clubsandwich_version
# Run from the repository root:  Rscript tests/reference/subgroup_df_clubsandwich.R
suppressPackageStartupMessages(library(clubSandwich))
here <- "tests/reference"
cells <- read.csv(file.path(here, "subgroup_df_cells.csv"), stringsAsFactors = FALSE,
                  colClasses = c(value = "character", cluster = "character"))
r_version <- R.version.string
cs_version <- as.character(packageVersion("clubSandwich"))
cat(r_version, "clubSandwich", cs_version, "\n")
ctrl <- glm.control(epsilon = 1e-14, maxit = 100)
working <- function(fit) {  # the IRLS working regression of a converged glm
  w <- fit$weights  # working weights, prior weights included: k mu (1 - mu)
  z <- fit$linear.predictors + fit$residuals
  Z <- sqrt(w) * model.matrix(fit)
  zz <- sqrt(w) * z
  lm(zz ~ 0 + Z)
}
satt <- function(fit, cl) {
  ct <- coef_test(fit, vcov = "CR2", cluster = cl, test = "Satterthwaite")
  c(se = ct$SE[2], df = ct$df_Satt[2], p = ct$p_Satt[2], beta = ct$beta[2])
}
out <- list()
for (case in unique(cells$case)) {
  part <- cells[cells$case == case, ]
  for (v in sort(unique(part$value))) {
    g <- length(unique(part$cluster[part$value == v & part$n > 0]))
    if (g < 2) next  # one cluster: refused by the workbench (leverage 1)
    part$ind <- as.numeric(part$value == v)
    # collapse: one row per cluster x indicator x outcome, weight = its number of rows
    agg <- aggregate(cbind(n, deviations) ~ cluster + ind, data = part, FUN = sum)
    co <- rbind(data.frame(cluster = agg$cluster, ind = agg$ind, y = 1, k = agg$deviations),
                data.frame(cluster = agg$cluster, ind = agg$ind, y = 0,
                           k = agg$n - agg$deviations))
    co <- co[co$k > 0, ]
    fit <- glm(y ~ ind, family = binomial(), data = co, weights = k, control = ctrl)
    s <- satt(working(fit), co$cluster)
    rows_s <- c(se = NA, df = NA)
    glm_s <- c(se = NA, df = NA)
    if (case != "bbq") {  # the same on the rows, one by one, and clubSandwich's glm CR2
      rows <- co[rep(seq_len(nrow(co)), co$k), c("cluster", "ind", "y")]
      rfit <- glm(y ~ ind, family = binomial(), data = rows, control = ctrl)
      rows_s <- satt(working(rfit), rows$cluster)
      glm_s <- satt(rfit, rows$cluster)
    }
    out[[length(out) + 1]] <- data.frame(
      case = case, value = v, n_clusters = g, estimate = unname(coef(fit)[2]),
      std_err = s[["se"]], df = s[["df"]], p_value = s[["p"]],
      rows_std_err = rows_s[["se"]], rows_df = rows_s[["df"]],
      glm_std_err = glm_s[["se"]], glm_df = glm_s[["df"]],
      r_version = r_version, clubsandwich_version = cs_version)
  }
}
res <- do.call(rbind, out)
write.csv(res, file.path(here, "subgroup_df_clubsandwich.csv"), row.names = FALSE)
print(res[, 1:11], digits = 8)
