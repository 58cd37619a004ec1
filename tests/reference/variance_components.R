# Reference variance components for analysis/variance_components.py (REML on crossed
# random facets): lme4::lmer fits (REML = TRUE) of seeded simulated benchmarks.
#
# Run from the repository root:  Rscript tests/reference/variance_components.R
# Writes tests/reference/variance_components_data.csv (the rows, one column `case`) and
# tests/reference/variance_components.json (R's and lme4's versions, and per case the
# REML variances by component, the REML criterion and the fixed effects).
# The tests (tests/analysis/test_variance_components.py) read both files: CI has no R.
suppressMessages({library(lme4); library(jsonlite)})
set.seed(20261202)

crossed <- function(n_t, n_s, n_m, n_i, sd_t, sd_tm, sd_s, sd_sm, sd_e, drop = 0) {
  d <- expand.grid(item = seq_len(n_i), model = paste0("m", seq_len(n_m)),
                   seed = paste0("s", seq_len(n_s)), template = paste0("t", seq_len(n_t)))
  ut <- rnorm(n_t, 0, sd_t); us <- rnorm(n_s, 0, sd_s)
  utm <- matrix(rnorm(n_t * n_m, 0, sd_tm), n_t); usm <- matrix(rnorm(n_s * n_m, 0, sd_sm), n_s)
  ti <- as.integer(d$template); si <- as.integer(d$seed); mi <- as.integer(d$model)
  d$y <- 0.4 + 0.1 * (mi - 1) + ut[ti] + us[si] + utm[cbind(ti, mi)] + usm[cbind(si, mi)] +
    rnorm(nrow(d), 0, sd_e)
  if (drop > 0) d <- d[runif(nrow(d)) > drop, ]
  d
}
binary <- function(n_t, n_m, n_i) {
  d <- expand.grid(item = seq_len(n_i), model = paste0("m", seq_len(n_m)),
                   template = paste0("t", seq_len(n_t)))
  d$category <- paste0("c", (as.integer(d$template) - 1) %% 3)
  ut <- rnorm(n_t, 0, 0.12); utm <- matrix(rnorm(n_t * n_m, 0, 0.06), n_t)
  ti <- as.integer(d$template); mi <- as.integer(d$model)
  p <- pmin(pmax(0.3 + 0.1 * (mi - 1) + 0.05 * (as.integer(factor(d$category)) - 1) +
                   ut[ti] + utm[cbind(ti, mi)], 0.01), 0.99)
  d$y <- as.integer(runif(nrow(d)) < p)
  d <- d[runif(nrow(d)) > 0.2, ]
  d
}
cases <- list(
  balanced = list(data = crossed(12, 4, 2, 10, 0.5, 0.3, 0.2, 0.1, 1),
                  formula = y ~ model + (1 | template) + (1 | template:model) + (1 | seed) +
                    (1 | seed:model)),
  unbalanced = list(data = crossed(9, 3, 3, 6, 0.4, 0.2, 0.3, 0.0, 0.8, drop = 0.3),
                    formula = y ~ model + (1 | template) + (1 | template:model) + (1 | seed) +
                      (1 | seed:model)),
  binary_nested = list(data = binary(24, 2, 30),
                       formula = y ~ model + category + (1 | template) + (1 | template:model))
)
out <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")), cases = list())
rows <- list()
for (name in names(cases)) {
  d <- cases[[name]]$data
  fit <- lmer(cases[[name]]$formula, data = d, REML = TRUE,
              control = lmerControl(optimizer = "bobyqa",
                                    optCtrl = list(rhobeg = 1e-2, rhoend = 1e-12)))
  vc <- as.data.frame(VarCorr(fit))
  out$cases[[name]] <- list(
    group = vc$grp, variance = vc$vcov, reml_criterion = unname(REMLcrit(fit)),
    fixef = as.list(fixef(fit)), n = nrow(d))
  d$case <- name
  if (is.null(d$seed)) d$seed <- NA
  if (is.null(d$category)) d$category <- NA
  rows[[name]] <- d[, c("case", "template", "seed", "model", "category", "item", "y")]
}
write.csv(do.call(rbind, rows), "tests/reference/variance_components_data.csv",
          row.names = FALSE)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           "tests/reference/variance_components.json")
