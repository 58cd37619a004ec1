# Reference numbers for the mixed model's Satterthwaite df (analysis/importance_linear.py,
# linear_importance(mixed=True)): lmerTest's summary() of lmer fits (REML), on the seeded
# data of clubsandwich_reference.R (run that first; it writes clubsandwich_data.csv).
#
# Run from the repository root:  Rscript tests/reference/lmertest_reference.R
# Writes tests/reference/lmertest_reference.json with R's, lme4's and lmerTest's versions.
suppressMessages({library(lmerTest); library(jsonlite)})
data <- read.csv("tests/reference/clubsandwich_data.csv")
data$tier <- factor(data$tier, levels = c("t0", "t1", "t2", "t3"))
data$w <- factor(data$w, levels = c("x", "y"))
one <- function(formula) {
  fit <- lmer(as.formula(formula), data = data, REML = TRUE,
              control = lmerControl(optimizer = "bobyqa",
                                    optCtrl = list(rhobeg = 1e-2, rhoend = 1e-12)))
  co <- summary(fit, ddf = "Satterthwaite")$coefficients
  vc <- as.data.frame(VarCorr(fit))
  # the multi-df F tests: contestMD of each factor's columns, and anova()'s table
  # (type III, Satterthwaite denominator df) -- analysis/mixed_df.py::MixedDF.f_test
  ftest <- function(pattern) {
    L <- diag(length(fixef(fit)))[grepl(pattern, names(fixef(fit))), , drop = FALSE]
    ct <- contestMD(fit, L, ddf = "Satterthwaite")
    list(F = ct[["F value"]], num_df = ct[["NumDF"]], den_df = ct[["DenDF"]],
         p_value = ct[["Pr(>F)"]])
  }
  av <- anova(fit, ddf = "Satterthwaite")
  f_tests <- list(tier = ftest("^tier"), w = ftest("^w"),
                  anova = list(term = rownames(av), F = unname(av[["F value"]]),
                               num_df = unname(av[["NumDF"]]),
                               den_df = unname(av[["DenDF"]]),
                               p_value = unname(av[["Pr(>F)"]])))
  list(formula = formula, term = rownames(co), estimate = unname(co[, "Estimate"]),
       std_err = unname(co[, "Std. Error"]), df = unname(co[, "df"]),
       t = unname(co[, "t value"]), p_value = unname(co[, "Pr(>|t|)"]),
       theta = unname(getME(fit, "theta")), sigma = sigma(fit),
       reml_criterion = unname(REMLcrit(fit)), varcorr = vc$vcov, f_tests = f_tests)
}
out <- list(
  generated_by = "tests/reference/lmertest_reference.R",
  R_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  lmerTest_version = as.character(packageVersion("lmerTest")),
  cases = list(intercept = one("score ~ tier + w + (1 | cluster)"),
               slopes = one("score ~ tier + w + (1 + w | cluster)")))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           "tests/reference/lmertest_reference.json")
cat(R.version.string, "lme4", out$lme4_version, "lmerTest", out$lmerTest_version, "\n")
