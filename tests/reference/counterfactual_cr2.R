# Reference numbers for the clustered tests of counterfactual pairs
# (analysis/counterfactual.py -> analysis/compare.py::cluster_mean_difference and
# durkalski_test): the CR2 t test of the mean paired difference (intercept-only lm of
# d = y_b - y_a, clubSandwich's CR2 with Satterthwaite df) on templates of UNEQUAL sizes,
# and Durkalski et al.'s (2003) clustered McNemar statistic written out from its formula.
#
# Run from the repository root:  Rscript tests/reference/counterfactual_cr2.R
# Writes tests/reference/counterfactual_cr2_data.csv (the pairs, seeded) and
# tests/reference/counterfactual_cr2.json (R's and the packages' versions and the numbers).
# CI has no R: tests/analysis/test_counterfactual_audit.py reads the stored files.
suppressMessages({library(clubSandwich); library(jsonlite)})
set.seed(20261202)
sizes <- c(31, 4, 9, 6, 17, 3, 12, 8)            # pairs per template (unequal)
G <- length(sizes)
template <- rep(sprintf("t%d", seq_len(G)), times = sizes)
gi <- rep(seq_len(G), times = sizes)
effect <- rnorm(G, 0.1, 0.15)                     # the swap's effect varies by template
base <- runif(G, 0.2, 0.5)
p_a <- base[gi]; p_b <- pmin(pmax(base[gi] + effect[gi], 0.02), 0.98)
y_a <- as.integer(runif(length(gi)) < p_a)
y_b <- as.integer(runif(length(gi)) < p_b)
score_a <- round(rnorm(length(gi), 3 + 0.5 * base[gi], 1), 3)
score_b <- round(score_a + effect[gi] + rnorm(length(gi), 0, 0.5), 3)
data <- data.frame(template = template, slot = sequence(sizes), y_a = y_a, y_b = y_b,
                   score_a = score_a, score_b = score_b)
write.csv(data, "tests/reference/counterfactual_cr2_data.csv", row.names = FALSE)

cr2 <- function(d) {
  fit <- lm(d ~ 1)
  ct <- coef_test(fit, vcov = "CR2", cluster = data$template, test = "Satterthwaite")
  ci <- conf_int(fit, vcov = "CR2", cluster = data$template, level = 0.95,
                 test = "Satterthwaite")
  list(estimate = unname(coef(fit)[1]), se = ct$SE[1], df = ct$df_Satt[1],
       p_value = ct$p_Satt[1], ci_low = ci$CI_L[1], ci_high = ci$CI_U[1])
}
b <- tapply(data$y_a == 1 & data$y_b == 0, data$template, sum)  # only the reference deviates
c <- tapply(data$y_a == 0 & data$y_b == 1, data$template, sum)  # only the value deviates
stat <- sum(b - c)^2 / sum((b - c)^2)
out <- list(
  R = R.version.string, clubSandwich = as.character(packageVersion("clubSandwich")),
  binary = cr2(data$y_b - data$y_a), score = cr2(data$score_b - data$score_a),
  durkalski = list(statistic = stat, p_value = pchisq(stat, 1, lower.tail = FALSE)))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           "tests/reference/counterfactual_cr2.json")
