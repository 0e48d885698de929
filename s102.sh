echo a=(b)
