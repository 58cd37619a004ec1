# Reference numbers for the small-sample CR2 kernel (analysis/clusters.py::SmallSampleCR2).
#
# Run from the repository root:  Rscript tests/reference/clubsandwich_reference.R
# Writes tests/reference/clubsandwich_data.csv (the simulated benchmarks, seeded) and
# tests/reference/clubsandwich_reference.json (R's and the packages' versions, and per case
# clubSandwich's CR2 standard errors, Satterthwaite df / t / p and HTZ Wald tests).
# CI has no R: the tests (tests/analysis/test_small_sample.py) read the stored files.
#
# Cases: a linear model with unbalanced clusters (lm, no weights: clubSandwich's
# inverse_var = TRUE, working model Var(y) = sigma^2 I); a logistic glm through its IRLS
# working regression (lm of sqrt(w) z on sqrt(w) X: the same estimates and the
# Bell-McCaffrey CR2 of the whitened model, which is the CR2 the workbench computes); and,
# for the record, clubSandwich's own vcovCR.glm (a different square root of the CR2
# adjustment when the working weights vary inside a cluster; docs/uncertainty.md).
# A template-level factor `sub` has values resting on 1, 2 and 3 clusters (and the
# reference on 6); `tier` is a balanced 4-value template-level factor; `w` varies inside
# every cluster.
suppressMessages({library(clubSandwich); library(jsonlite)})
set.seed(20260338)
G <- 12
sizes <- sample(8:45, G, replace = TRUE)
cluster <- rep(sprintf("T%02d", 1:G), times = sizes)
gi <- rep(1:G, times = sizes)
sub_of <- c("one", "two", "two", "three", "three", "three", rep("ref", 6))
tier_of <- sprintf("t%d", (0:(G - 1)) %% 4)
N <- length(cluster)
sub <- factor(sub_of[gi], levels = c("ref", "one", "two", "three"))
tier <- factor(tier_of[gi], levels = c("t0", "t1", "t2", "t3"))
w <- factor(sample(c("x", "y"), N, replace = TRUE), levels = c("x", "y"))
u <- rnorm(G, 0, 0.7)
score <- 0.3 * (w == "y") + u[gi] + rnorm(N)
deviation <- rbinom(N, 1, plogis(-0.4 + 0.4 * (w == "y") + u[gi]))
data <- data.frame(cluster = cluster, sub = as.character(sub), tier = as.character(tier),
                   w = as.character(w), score = score, deviation = deviation)
write.csv(data, "tests/reference/clubsandwich_data.csv", row.names = FALSE)
frame <- data.frame(score = score, deviation = deviation, sub = sub, tier = tier, w = w)

coefs <- function(fit, cl) {
  V <- vcovCR(fit, cluster = cl, type = "CR2")
  ct <- coef_test(fit, vcov = V, test = "Satterthwaite")
  list(term = ct$Coef, estimate = ct$beta, std_err = ct$SE, t = ct$tstat,
       df = ct$df_Satt, p_value = ct$p_Satt)
}
htz <- function(fit, cl, pattern) {
  V <- vcovCR(fit, cluster = cl, type = "CR2")
  which <- grepl(pattern, names(coef(fit)))
  wt <- Wald_test(fit, constraints = constrain_zero(which), vcov = V, test = "HTZ")
  list(columns = names(coef(fit))[which], Fstat = wt$Fstat, df_num = wt$df_num,
       df_denom = wt$df_denom, p_value = wt$p_val)
}
contrast <- function(fit, cl, cvec) {  # a single contrast vector as a 1-row Wald test
  V <- vcovCR(fit, cluster = cl, type = "CR2")
  wt <- Wald_test(fit, constraints = matrix(cvec, nrow = 1), vcov = V, test = "HTZ")
  list(contrast = cvec, Fstat = wt$Fstat, df_denom = wt$df_denom, p_value = wt$p_val)
}
working <- function(glmfit) {  # the IRLS working regression of a converged glm
  wts <- glmfit$weights
  z <- glmfit$linear.predictors + glmfit$residuals
  Z <- sqrt(wts) * model.matrix(glmfit)
  colnames(Z) <- names(coef(glmfit))
  zz <- sqrt(wts) * z
  lm(zz ~ 0 + Z)
}
rename <- function(res, names) { res$term <- names; res }

cases <- list()
for (model in c("sub", "tier")) {
  f <- as.formula(paste("score ~", model, "+ w"))
  fit <- lm(f, data = frame)
  cases[[paste0("linear_", model)]] <- list(
    kind = "linear", formula = deparse(f), coefficients = coefs(fit, cluster),
    htz = list(factor = htz(fit, cluster, paste0("^", model)), w = htz(fit, cluster, "^w")),
    contrast = if (model == "sub") contrast(fit, cluster, c(0, 1, -1, 0, 0)) else NULL)
  g <- as.formula(paste("deviation ~", model, "+ w"))
  gfit <- glm(g, family = binomial, data = frame,
              control = glm.control(epsilon = 1e-14, maxit = 100))
  wfit <- working(gfit)
  names_g <- names(coef(gfit))
  cases[[paste0("logistic_", model)]] <- list(
    kind = "logistic", formula = deparse(g), estimate = unname(coef(gfit)),
    coefficients = rename(coefs(wfit, cluster), names_g),
    htz = list(factor = htz(wfit, cluster, paste0("^Z", model)), w = htz(wfit, cluster, "^Zw")),
    clubsandwich_glm = rename(coefs(gfit, cluster), names_g))
}
# Group means of a continuous score with a cluster (analysis/continuous.py::group_means):
# a difference of group means is the treatment coefficient of lm(score ~ factor), its
# marginal model (no other factor), with the CR2 covariance and Satterthwaite df.
for (model in c("sub", "w")) {
  f <- as.formula(paste("score ~", model))
  fit <- lm(f, data = frame)
  cases[[paste0("group_means_", model)]] <- list(
    kind = "group_means", formula = deparse(f), coefficients = coefs(fit, cluster))
}
out <- list(
  generated_by = "tests/reference/clubsandwich_reference.R",
  R_version = R.version.string,
  clubSandwich_version = as.character(packageVersion("clubSandwich")),
  jsonlite_version = as.character(packageVersion("jsonlite")),
  n_rows = N, n_clusters = G, cases = cases)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE, null = "null"),
           "tests/reference/clubsandwich_reference.json")
cat(R.version.string, "clubSandwich", as.character(packageVersion("clubSandwich")), "\n")
