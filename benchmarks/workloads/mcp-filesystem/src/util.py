def helper(x):
    return 2 * x
