a=(b
