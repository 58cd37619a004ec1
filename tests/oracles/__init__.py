"""Reference implementations that only the tests use: slow, simple ways to the numbers the
product computes another way (moved here from the product so it keeps only what it runs)."""
